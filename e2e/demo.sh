#!/usr/bin/env bash
# The README's demo: a test cluster, the Helm chart, the operator, the example OrangeFSCluster, then
# `kubectl get ofs`. On a machine without Docker the cluster is the local control plane with kwok
# nodes, and the operator runs as a local process with the chart's ServiceAccount identity (a bound
# token from the TokenRequest API, so it has exactly the chart's RBAC). The cluster is left running:
# `e2e/cluster.sh down` stops it (and the operator).
set -euo pipefail

# How the operator is started (with the venv's bin/ first on PATH).
OPERATOR_CMD=(kopf run --standalone --all-namespaces -m pfslayout.operator)
RELEASE=${PFSLAYOUT_DEMO_RELEASE:-pfs-layout-operator}
OPERATOR_NAMESPACE=${PFSLAYOUT_DEMO_OPERATOR_NAMESPACE:-pfs-layout-system}
DEMO_NAMESPACE=${PFSLAYOUT_DEMO_NAMESPACE:-pfslayout-demo}
READY_TIMEOUT=${PFSLAYOUT_DEMO_TIMEOUT:-180}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. e2e/cluster/lib.sh   # STATE_DIR, PORT_BASE (and the ports the demo operator uses)
step() { printf '\n==> %s\n' "$*" >&2; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

step "host packages and Python environment"
e2e/setup/host-packages.sh
venv=$(e2e/setup/python-env.sh)

step "test cluster (build is cached under ~/.cache; up returns at once when it already runs)"
e2e/cluster.sh build
e2e/cluster.sh up >/dev/null   # logs on stderr; stdout says started/already-running
eval "$(e2e/cluster.sh env)"
use_state_ports
mode=$(cat "$STATE_DIR/mode" 2>/dev/null || echo local)
k() { "$KUBECTL" --request-timeout=30s "$@"; }

chart=charts/pfs-layout-operator
[ -f "$chart/Chart.yaml" ] || fail "the Helm chart $chart is not there yet (it is built in issue #3): nothing to install"
step "helm install $RELEASE ($chart) into $OPERATOR_NAMESPACE"
helm_args=()
# On kind the chart's own Deployment runs the operator image built from images/; on the local control
# plane that pod is only played by kwok, and the real operator is the local process started below.
[ "$mode" = kind ] && helm_args+=(--set image.tag=dev --set image.repository=pfslayout/operator)
"$HELM" upgrade --install "$RELEASE" "$chart" -n "$OPERATOR_NAMESPACE" --create-namespace \
  --wait --timeout 180s "${helm_args[@]}"

if [ "$mode" = local ]; then
  "$venv/bin/python" -c 'import pfslayout.operator' 2>/dev/null ||
    fail "the operator module pfslayout.operator is not there yet (issue #3): cannot start it"
  sa=$(k -n "$OPERATOR_NAMESPACE" get deployment -l "app.kubernetes.io/instance=$RELEASE" \
        -o jsonpath='{.items[0].spec.template.spec.serviceAccountName}')
  [ -n "$sa" ] || fail "the chart's Deployment names no ServiceAccount"
  pidfile=$STATE_DIR/pids/operator.pid
  if [ -f "$pidfile" ] && read -r pid start < "$pidfile" && [ "$(awk '$3 != "Z" {print $22}' "/proc/$pid/stat" 2>/dev/null)" = "$start" ]; then
    step "operator already running (pid $pid)"
  else
    step "operator as a local process with ServiceAccount $OPERATOR_NAMESPACE/$sa"
    sa_kubeconfig=$STATE_DIR/operator.kubeconfig
    token=$(k -n "$OPERATOR_NAMESPACE" create token "$sa" --duration=24h)
    ca=$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
    server=$(k config view --raw -o jsonpath='{.clusters[0].cluster.server}')
    ( umask 077; cat > "$sa_kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $sa, user: {token: "$token"}}]
contexts: [{name: e2e, context: {cluster: e2e, user: $sa, namespace: $OPERATOR_NAMESPACE}}]
current-context: e2e
KC
    )
    health="http://127.0.0.1:$PORT_OPERATOR_HEALTH/healthz"
    mkdir -p "$STATE_DIR/logs" "$STATE_DIR/pids"
    # Registered in the cluster's pid directory, so `e2e/cluster.sh down` stops it first.
    KUBECONFIG=$sa_kubeconfig PATH="$venv/bin:$PATH" PFSLAYOUT_METRICS_ADDR="127.0.0.1:$PORT_OPERATOR_METRICS" \
      setsid "${OPERATOR_CMD[@]}" --liveness="$health" </dev/null >"$STATE_DIR/logs/operator.log" 2>&1 &
    pid=$!
    echo "$pid $(awk '{print $22}' "/proc/$pid/stat")" > "$pidfile"
    for _ in $(seq 1 120); do
      curl -fsS "$health" >/dev/null 2>&1 && break
      kill -0 "$pid" 2>/dev/null || { tail -n 30 "$STATE_DIR/logs/operator.log" >&2; fail "the operator exited (log: $STATE_DIR/logs/operator.log)"; }
      sleep 0.5
    done
    curl -fsS "$health" >/dev/null || fail "the operator's health endpoint $health never answered (log: $STATE_DIR/logs/operator.log)"
  fi
fi

shopt -s nullglob
policies=(policies/*.yaml)
[ ${#policies[@]} -gt 0 ] || fail "no example manifests in policies/ yet (policies/orangefs-small.yaml comes with issue #3)"
step "applying ${policies[*]} in namespace $DEMO_NAMESPACE"
k create namespace "$DEMO_NAMESPACE" --dry-run=client -o yaml | k apply -f - >/dev/null
for f in "${policies[@]}"; do k -n "$DEMO_NAMESPACE" apply -f "$f"; done

step "waiting up to ${READY_TIMEOUT}s for the OrangeFSClusters to be Ready"
# One deadline for all of them (`kubectl wait --all` spends the whole timeout on the first one).
ready=0
deadline=$((SECONDS + READY_TIMEOUT))
while [ $SECONDS -lt $deadline ]; do
  states=$(k -n "$DEMO_NAMESPACE" get orangefsclusters \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
  [ -n "$states" ] && ! grep -qv '^True$' <<<"$states" && { ready=1; break; }
  sleep 2
done

step "kubectl get ofs"
k get ofs -A
cat >&2 <<MSG

The cluster is still running. Use it with:   eval "\$(e2e/cluster.sh env)"
Operator log:                                $STATE_DIR/logs/operator.log
Stop everything (operator and cluster):      e2e/cluster.sh down
MSG
[ $ready -eq 1 ] || fail "the OrangeFSClusters did not become Ready within ${READY_TIMEOUT}s (see the operator log)"
