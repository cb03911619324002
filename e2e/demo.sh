#!/usr/bin/env bash
# The README's demo: a test cluster with a real node, the Helm chart with the operator running in-cluster
# from its image, the example OrangeFSClusters of policies/ as real pvfs2-server pods, then `kubectl get
# ofs` and a `pvfs2-ping` from a client toolbox. On the local control plane the examples are placed on
# the real node (e2e/testkit/pfstestkit/real.py adds its node selector and toleration); on kind every node is real.
# The cluster is left running: `e2e/harness/cluster.sh down` stops it.
set -euo pipefail

RELEASE=${PFSLAYOUT_DEMO_RELEASE:-pfs-layout-operator}
OPERATOR_NAMESPACE=${PFSLAYOUT_DEMO_OPERATOR_NAMESPACE:-pfs-layout-system}
DEMO_NAMESPACE=${PFSLAYOUT_DEMO_NAMESPACE:-pfslayout-demo}
READY_TIMEOUT=${PFSLAYOUT_DEMO_TIMEOUT:-300}
# The four calibrations probe one after the other (each alone measures the platform, not the others:
# docs/operator.md), each its full grid: about 2 minutes apiece on the test cluster's real node.
CALIBRATION_TIMEOUT=${PFSLAYOUT_DEMO_CALIBRATION_TIMEOUT:-1200}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. e2e/harness/cluster/lib.sh   # STATE_DIR
step() { printf '\n==> %s\n' "$*" >&2; }
fail() { printf 'demo: %s\n' "$*" >&2; exit 1; }

step "host packages and Python environment"
e2e/harness/setup/host-packages.sh
venv=$(e2e/harness/setup/python-env.sh)

step "test cluster and images (built once, cached under ~/.cache; up returns at once when it already runs)"
e2e/harness/cluster.sh build
e2e/harness/cluster.sh up >/dev/null   # logs on stderr; stdout says started/already-running
eval "$(e2e/harness/cluster.sh env)"
mode=$("$venv/bin/python" -m pfstestkit.real mode "$STATE_DIR") || fail "the test cluster did not record its mode"
if [ "$mode" = local ] && ! grep -q '^REAL_NODE=1$' "$STATE_DIR/cluster.env"; then
  fail "this cluster has no real node (PFSLAYOUT_E2E_REAL_NODE=0): the demo runs real OrangeFS pods; e2e/harness/cluster.sh down, then run the demo again without that setting"
fi
k() { "$KUBECTL" --request-timeout=30s "$@"; }
place() { "$venv/bin/python" -m pfstestkit.real place "$mode"; }
# The operator's image, its pods on a node that runs them, and the image's build key as a pod annotation
# (the tag stays `dev` when the image is rebuilt: the annotation rolls the operator).
mapfile -t operator_values < <("$venv/bin/python" -m pfstestkit.real chart-values "$mode" "$STATE_DIR")

chart=charts/pfs-layout-operator
# The operator serves the demo's namespace only (docs/rbac.md): the chart binds its rights there, so
# the namespace exists first.
k create namespace "$DEMO_NAMESPACE" --dry-run=client -o yaml | k apply -f - >/dev/null
step "helm install $RELEASE ($chart) into $OPERATOR_NAMESPACE serving $DEMO_NAMESPACE, the operator from its image"
"$HELM" upgrade --install "$RELEASE" "$chart" -n "$OPERATOR_NAMESPACE" --create-namespace \
  --set-json "operator.watchNamespaces=[\"$DEMO_NAMESPACE\"]" "${operator_values[@]}" --wait --timeout 300s

shopt -s nullglob
policies=(policies/*.yaml)
[ ${#policies[@]} -gt 0 ] || fail "no example manifests in policies/ yet (the OrangeFSCluster examples live there)"
# Clusters and policies first; the examples' MPIJobs once the policies selecting them are Ready, so the
# admission webhook injects them (a job created before its policy is reconciled would be refused).
only() { "$venv/bin/python" -c 'import sys, yaml
keep = sys.argv[1] == "jobs"
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and (d.get("kind") == "MPIJob") == keep]
sys.stdout.write(yaml.safe_dump_all(docs) if docs else "")' "$1"; }
step "applying the clusters and policies of ${policies[*]} in namespace $DEMO_NAMESPACE"
for f in "${policies[@]}"; do
  docs=$(place < "$f" | only other)
  [ -z "$docs" ] || k -n "$DEMO_NAMESPACE" apply -f - <<<"$docs"
done

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
k -n "$DEMO_NAMESPACE" get pods -o wide
[ $ready -eq 1 ] || fail "the OrangeFSClusters did not become Ready within ${READY_TIMEOUT}s (kubectl -n $OPERATOR_NAMESPACE logs deployment/$RELEASE)"

for name in $(k -n "$DEMO_NAMESPACE" get orangefsclusters -o jsonpath='{.items[*].metadata.name}'); do
  step "pvfs2-ping from the $name client toolbox (a real pod) against the $name servers"
  k -n "$DEMO_NAMESPACE" wait --for=condition=Available --timeout=120s "deployment/$name-client" >/dev/null
  k -n "$DEMO_NAMESPACE" exec "deployment/$name-client" -- pvfs2-ping -m /mnt/orangefs
done
step "waiting up to ${CALIBRATION_TIMEOUT}s for the CostCalibrations to publish (one probes at a time) and the LayoutPolicies to apply"
deadline=$((SECONDS + CALIBRATION_TIMEOUT))
while [ $SECONDS -lt $deadline ]; do
  phases=$(k -n "$DEMO_NAMESPACE" get costcalibrations -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')
  lp_states=$(k -n "$DEMO_NAMESPACE" get layoutpolicies \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].reason}{"\n"}{end}')
  ! grep -qvE '^(Succeeded|Failed)$' <<<"$phases" && ! grep -qv '^Applied$' <<<"$lp_states" && break
  sleep 3
done
step "kubectl get cc,lp"
k -n "$DEMO_NAMESPACE" get costcalibrations,layoutpolicies -o wide

step "submitting the examples' MPIJobs as plain jobs: the webhook gives the selected ones the shim"
for f in "${policies[@]}"; do
  docs=$(place < "$f" | only jobs)
  [ -z "$docs" ] || k -n "$DEMO_NAMESPACE" apply -f - <<<"$docs"
done
k -n "$DEMO_NAMESPACE" get mpijobs.kubeflow.org \
  -o custom-columns='MPIJOB:.metadata.name,INJECTED BY:.metadata.annotations.pfslayout\.io/injected'
echo "(kubectl -n $DEMO_NAMESPACE get lp learning -o yaml: the rule learns from the job once it succeeds)" >&2
cat >&2 <<MSG

The cluster is still running. Use it with:   eval "\$(e2e/harness/cluster.sh env)"
Operator log:                                kubectl -n $OPERATOR_NAMESPACE logs deployment/$RELEASE
Stop everything:                             e2e/harness/cluster.sh down
MSG
