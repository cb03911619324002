#!/usr/bin/env bash
# The local control plane (no Docker): etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok (fake nodes and pod lifecycle) and the MPI Operator's controller, all as host processes bound to
# 127.0.0.1, plus one real node (node.sh: containerd, kubelet, bridge CNI, kube-proxy, CoreDNS on a
# private bridge), with their PIDs, logs and PKI under the state directory.
# Usage: local.sh up|down|status|env|restart etcd|kube-apiserver   (called by e2e/harness/cluster.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKI=$STATE_DIR/pki
PIDS=$STATE_DIR/pids
LOGS=$STATE_DIR/logs
KUBECONFIG_PATH=$STATE_DIR/kubeconfig
# Start order; `down` walks it backwards.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok mpi-operator)
NODE_COUNT=${PFSLAYOUT_E2E_NODES:-4}
UP_TIMEOUT=${PFSLAYOUT_E2E_UP_TIMEOUT:-120}

kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=20s "$@"; }
# shellcheck source=procs.sh
. "$CLUSTER_LIB_DIR/procs.sh"
# shellcheck source=registry.sh
. "$CLUSTER_LIB_DIR/registry.sh"
# shellcheck source=node.sh
. "$CLUSTER_LIB_DIR/node.sh"
# Everything `up` starts, in order, and what `status` reports.
running_components() {
  local c
  for c in "${COMPONENTS[@]}"; do echo "$c"; done
  if [ "$REAL_NODE" = 1 ]; then for c in "${NODE_COMPONENTS[@]}"; do echo "$c"; done; fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

all_running() {
  local c
  for c in $(running_components); do pid_of "$c" >/dev/null || return 1; done
  [ -f "$STATE_DIR/up.complete" ]
}

need_binaries() {
  local f
  for f in "$K8S_DIR/bin/kube-apiserver" "$K8S_DIR/bin/etcd" "$KWOK_DIR/bin/kwok" "$MPIOP_DIR/bin/mpi-operator" "$HELM" \
           "$K8S_DIR/bin/kubelet" "$COREDNS_DIR/bin/coredns" "$REGISTRY_DIR/bin/registry"; do
    [ -x "$f" ] || die "missing $f: run 'e2e/harness/cluster.sh build' first"
  done
}

# etcd and the API server, each started by one function: `up` and `restart` (fault tests) share them.
start_etcd() {
  start etcd "$K8S_DIR/bin/etcd" --name=pfslayout-e2e --data-dir="$STATE_DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$PORT_ETCD_CLIENT" --advertise-client-urls="http://127.0.0.1:$PORT_ETCD_CLIENT" \
    --listen-peer-urls="http://127.0.0.1:$PORT_ETCD_PEER" --initial-advertise-peer-urls="http://127.0.0.1:$PORT_ETCD_PEER" \
    --initial-cluster="pfslayout-e2e=http://127.0.0.1:$PORT_ETCD_PEER" \
    --listen-metrics-urls="http://127.0.0.1:$PORT_ETCD_METRICS" \
    --unsafe-no-fsync --log-level=warn
  wait_for "etcd health" etcd curl -fsS "http://127.0.0.1:$PORT_ETCD_CLIENT/health"
}

# PFSLAYOUT_E2E_AUDIT_LOG=<file> at `up`: the API server also writes an audit log there (one JSON line per
# request, metadata only), e.g. for operator/bench/idle_policies.py, which counts the operator's requests from
# it. Off by default: every request would cost a write. Kept in the state, so a restart (the fault tests
# restart the API server) keeps it; the next `up` without the variable turns it off.
audit_args() {
  local log=${PFSLAYOUT_E2E_AUDIT_LOG:-}
  [ -n "$log" ] || log=$(cat "$STATE_DIR/audit-log" 2>/dev/null || true)
  [ -n "$log" ] || return 0
  echo "$log" > "$STATE_DIR/audit-log"
  printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' 'rules:' \
    '  - level: Metadata' > "$STATE_DIR/audit-policy.yaml"
  printf '%s\n' --audit-policy-file="$STATE_DIR/audit-policy.yaml" --audit-log-path="$log" \
    --audit-log-format=json --audit-log-maxsize=500 --audit-log-maxbackup=1
}

start_apiserver() {
  local audit
  mapfile -t audit < <(audit_args)
  start kube-apiserver "$K8S_DIR/bin/kube-apiserver" "${audit[@]}" \
    --etcd-servers="http://127.0.0.1:$PORT_ETCD_CLIENT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$PORT_APISERVER" \
    --endpoint-reconciler-type=none \
    --cert-dir="$STATE_DIR/apiserver-certs" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=Node,RBAC --anonymous-auth=false \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --allow-privileged=true \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP \
    --profiling=false
  wait_for "kube-apiserver /readyz" kube-apiserver kubectl get --raw /readyz
}

# A fault for the tests (issue 14): one control-plane process killed by PID and started again with the
# same arguments and state, as a crash and a supervisor's restart would. SIGKILL, not SIGTERM: a crash
# gives no notice, and the API server's graceful shutdown outlasted stop_group's 15 s every time (it
# then got SIGKILL anyway), so each restart kept the API server away 17 s instead of ~2 — long enough
# for client-go's watch backoff (doubling to 30 s, jittered up to 60) to leave the controller manager
# deaf for up to a minute after /readyz: a Job created then got its pod 60 s later.
restart() {
  [ -f "$STATE_DIR/up.complete" ] || die "restart: no cluster is up (e2e/harness/cluster.sh up)"
  case ${1:-} in
    etcd) crash etcd "$PORT_ETCD_CLIENT" "$PORT_ETCD_PEER"; start_etcd ;;
    kube-apiserver) crash kube-apiserver "$PORT_APISERVER"; start_apiserver ;;
    *) die "restart: etcd or kube-apiserver, not '${1:-}'" ;;
  esac
  wait_for "kube-apiserver /readyz" kube-apiserver kubectl get --raw /readyz
  log "restart: $1 is back"
}

up() {
  if all_running && kubectl get --raw /readyz >/dev/null 2>&1; then
    log "already running (state: $STATE_DIR)"
    echo already-running
    return 0
  fi
  need_binaries
  # A half-alive cluster (a crash, a reboot) is not worth repairing: the state is throwaway.
  down quiet
  local p
  for p in $(seq "$PORT_BASE" $((PORT_BASE + PORT_COUNT - 1))); do
    port_free "$p" || die "127.0.0.1:$p is in use (another cluster?): set PFSLAYOUT_E2E_PORT_BASE to a free range of $PORT_COUNT ports and PFSLAYOUT_E2E_STATE to its own directory"
  done
  # Everything but the dot-files: the up/down and test-session locks live there.
  find "$STATE_DIR" -mindepth 1 -maxdepth 1 ! -name '.*' -exec rm -rf {} +
  mkdir -p "$STATE_DIR" "$PIDS" "$LOGS" "$STATE_DIR/helm"/{cache,config,data}
  rm -f "$STATE_DIR/audit-log"  # an audit log only when this `up` asks for one (audit_args)
  local t0=$SECONDS
  [ "$REAL_NODE" = 1 ] && node_preflight
  "$CLUSTER_LIB_DIR/pki.sh" "$PKI" "$PORT_APISERVER" "$NODE_NAME" "$NODE_IP"
  cp "$PKI/admin.kubeconfig" "$KUBECONFIG_PATH"
  cat > "$STATE_DIR/cluster.env" <<ENV
PORT_BASE=$PORT_BASE
K8S_VERSION=$K8S_VERSION
KWOK_VERSION=$KWOK_VERSION
HELM_VERSION=$HELM_VERSION
MPI_OPERATOR_VERSION=$MPI_OPERATOR_VERSION
REAL_NODE=$REAL_NODE
NODE_NAME=$NODE_NAME
NODE_IP=$NODE_IP
BRIDGE=$BRIDGE
ENV

  start_etcd
  start_apiserver

  start kube-controller-manager "$K8S_DIR/bin/kube-controller-manager" \
    --kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$PORT_KCM" --cert-dir="$STATE_DIR/kcm-certs" \
    --leader-elect=false --use-service-account-credentials --controllers='*' \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range=10.96.0.0/16 --profiling=false
  start kube-scheduler "$K8S_DIR/bin/kube-scheduler" \
    --kubeconfig="$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
    --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$PORT_SCHEDULER" --cert-dir="$STATE_DIR/scheduler-certs" \
    --leader-elect=false --profiling=false

  kubectl apply --server-side -f "$MPIOP_DIR/crd/kubeflow.org_mpijobs.yaml" >/dev/null
  "$CLUSTER_LIB_DIR/kwok/nodes.sh" "$NODE_COUNT" | kubectl apply -f - >/dev/null
  kubectl apply -f "$KWOK_DIR/manifests/storage-class.yaml" >/dev/null

  local stages=() s
  for s in "$KWOK_DIR"/stages/*.yaml; do stages+=(--config="$s"); done
  start kwok "$KWOK_DIR/bin/kwok" --kubeconfig="$PKI/kwok.kubeconfig" \
    --config="$CLUSTER_LIB_DIR/kwok/kwok.yaml" "${stages[@]}" --config="$CLUSTER_LIB_DIR/kwok/stages.yaml" \
    --server-address="127.0.0.1:$PORT_KWOK"

  wait_for "the MPIJob CRD to be established" "" \
    kubectl wait --for=condition=Established --timeout=5s crd/mpijobs.kubeflow.org
  start mpi-operator "$MPIOP_DIR/bin/mpi-operator" --kubeConfig="$PKI/mpi-operator.kubeconfig" \
    --health-addr="127.0.0.1:$PORT_MPIOP" --kube-api-qps=50 --kube-api-burst=100

  wait_for "the default ServiceAccount" kube-controller-manager kubectl -n default get serviceaccount default
  wait_for "$NODE_COUNT Ready nodes" kwok nodes_ready
  wait_for "the MPI Operator's /healthz" mpi-operator curl -fsS "http://127.0.0.1:$PORT_MPIOP/healthz"
  node_up
  local c
  for c in $(running_components); do alive_or_die "$c"; done
  touch "$STATE_DIR/up.complete"
  local real="no real node"
  [ "$REAL_NODE" = 1 ] && real="real node $NODE_NAME at $NODE_IP"
  log "up in $((SECONDS - t0)) s: Kubernetes $K8S_VERSION, $NODE_COUNT kwok nodes, $real, MPI Operator $MPI_OPERATOR_VERSION (state: $STATE_DIR)"
  echo started
}

nodes_ready() {
  local n
  n=$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')
  [ "$n" -ge "$NODE_COUNT" ]
}

crash() { # component port...: SIGKILL, then wait until the process and its listening sockets are gone
  local c=$1 pid p deadline=$((SECONDS + 15))
  shift
  if pid=$(pid_of "$c"); then
    kill -KILL "$pid" 2>/dev/null || true
    while pid_of "$c" >/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  fi
  rm -f "$PIDS/$c.pid"
  # Seen once: the new API server's bind failed ("address already in use") right after the old one
  # was gone from /proc.
  for p in "$@"; do
    while [ -n "$(ss -Hltn "src 127.0.0.1:$p")" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  done
}

down() {
  local quiet=${1:-} c f extras=() left=()
  # Reverse start order, by tiers: the API server's clients (and whatever other tools registered in
  # the pid directory, e.g. the demo's operator) together, then the API server, then etcd. Stopping
  # etcd together with the API server would make the API server retry for ~80 s.
  for f in "$PIDS"/*.pid; do
    [ -f "$f" ] || continue
    c=$(basename "$f" .pid)
    [[ " ${COMPONENTS[*]} ${NODE_COMPONENTS[*]} " == *" $c "* ]] || extras+=("$c")
  done
  stop_group "${extras[@]}"
  # The node before the control plane: its pods are stopped through containerd, not the API.
  node_down
  stop_group mpi-operator kwok kube-scheduler kube-controller-manager
  stop_group kube-apiserver
  stop_group etcd
  for c in "${extras[@]}" "${COMPONENTS[@]}" "${NODE_COMPONENTS[@]}"; do
    pid_of "$c" >/dev/null && left+=("$c")
  done
  rm -f "$STATE_DIR/up.complete"
  [ ${#left[@]} -eq 0 ] || die "still running after down: ${left[*]}"
  [ -n "$quiet" ] || log "down: nothing left running (logs kept in $LOGS)"
}

status() {
  local c pid rc=0
  for c in $(running_components); do
    if pid=$(pid_of "$c"); then printf '%-24s running  pid %s\n' "$c" "$pid"
    else printf '%-24s stopped\n' "$c"; rc=3; fi
  done
  if [ $rc -eq 0 ] && kubectl get --raw /readyz >/dev/null 2>&1; then
    echo "api server: ready at https://127.0.0.1:$PORT_APISERVER (KUBECONFIG=$KUBECONFIG_PATH)"
  else
    rc=3
  fi
  return $rc
}

env_lines() {
  local path_prefix="$K8S_DIR/bin:$HELM_DIR/bin"
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_PATH"
  printf 'export KUBECTL=%q\n' "$KUBECTL"
  printf 'export HELM=%q\n' "$HELM"
  # The registry the real node pulls from (host:port; registry.sh), where images/build.sh --push puts images.
  if [ "$REAL_NODE" = 1 ]; then printf 'export PFSLAYOUT_REGISTRY=%q\n' "$REGISTRY_ADDR"; fi
  printf 'export HELM_CACHE_HOME=%q HELM_CONFIG_HOME=%q HELM_DATA_HOME=%q\n' \
    "$STATE_DIR/helm/cache" "$STATE_DIR/helm/config" "$STATE_DIR/helm/data"
  # shellcheck disable=SC2016  # $PATH is expanded by whoever evaluates these lines
  printf 'export PATH=%q:"$PATH"\n' "$path_prefix"
}

if [ "${1:-}" != up ]; then
  use_state_ports
  # A running cluster's node settings are the ones it was started with, whatever the caller's
  # environment says now.
  if [ -f "$STATE_DIR/cluster.env" ]; then
    eval "$(grep -E '^(REAL_NODE|NODE_NAME|NODE_IP|BRIDGE)=[A-Za-z0-9._-]*$' "$STATE_DIR/cluster.env")"
  fi
fi

case ${1:-} in
  up) up ;;
  down) down ;;
  leftovers) node_leftovers ;;
  images)
    pid_of containerd >/dev/null || die "the real node is not running: e2e/harness/cluster.sh up first"
    mkdir -p "$NODE_DIR"
    node_import_images ;;
  status) status ;;
  restart) restart "${2:-}" ;;
  env) env_lines ;;
  *) die "usage: local.sh up|down|status|env|leftovers|images" ;;
esac
