#!/usr/bin/env bash
# The user guide's whole loop (docs/user-guide.md, "The whole loop"), run on the demo's cluster after
# `e2e/demo.sh`: it waits for each stage — the OrangeFSClusters, the calibration, the layout policy, the
# example MPIJob the webhook gave the shim, the layout learned from its traces — and prints every command
# the guide shows followed by what it printed. The guide's output blocks are this script's, from a real
# run (the guide names the date and the commit).
#   e2e/demo.sh && e2e/walkthrough.sh
# Settings: PFSLAYOUT_DEMO_NAMESPACE (pfslayout-demo, the demo's), PFSLAYOUT_WALKTHROUGH_TIMEOUT (900 s per
# stage). Exits 1 naming the stage that did not finish in time.
set -euo pipefail

NS=${PFSLAYOUT_DEMO_NAMESPACE:-pfslayout-demo}
TIMEOUT=${PFSLAYOUT_WALKTHROUGH_TIMEOUT:-900}
MOUNT=/mnt/orangefs

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { printf 'walkthrough: %s\n' "$*" >&2; exit 1; }
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "walkthrough: PFSLAYOUT_WALKTHROUGH_TIMEOUT='$TIMEOUT' is not a number of seconds" >&2; exit 2; }
env_out=$(e2e/harness/cluster.sh env 2>/dev/null) || fail "no test cluster runs: run e2e/demo.sh first"
eval "$env_out"
# The guide shows plain `kubectl`: the cluster's own, with its kubeconfig from `cluster.sh env`.
kubectl() { "$KUBECTL" --request-timeout=30s "$@"; }
"$KUBECTL" get namespace "$NS" >/dev/null 2>&1 || fail "namespace $NS does not exist: run e2e/demo.sh first"

show() {  # show COMMAND: prints `$ COMMAND` and runs it (COMMAND is one of the guide's lines)
  printf '\n$ %s\n' "$1"
  eval "$1"
}
stage() { printf '\n# %s\n' "$*"; }
wait_for() {  # wait_for WHAT CHECK...: until the command CHECK... succeeds, at most $TIMEOUT s
  local what=$1 deadline=$((SECONDS + TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "$what not within ${TIMEOUT}s"
    sleep 3
  done
}
jp() { kubectl get -n "$NS" "$1" -o jsonpath="$2" 2>/dev/null; }
condition() { [ "$(jp "$1" "{.status.conditions[?(@.type==\"$2\")].status}")" = True ]; }  # condition OBJECT TYPE
all_ofs_ready() {
  local states
  states=$(jp ofs '{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
  [ -n "$states" ] && ! grep -qv '^True$' <<<"$states"
}
calibration_done() { [[ $(jp cc/probe-4 '{.status.phase}') =~ ^(Succeeded|Failed)$ ]]; }
launcher_exists() { [ -n "$(kubectl get pods -n "$NS" -l "$launcher" -o name)" ]; }
launcher='training.kubeflow.org/job-name=ior-shared,training.kubeflow.org/job-role=launcher'

stage "1. The file systems"
wait_for "the OrangeFSClusters Ready" all_ofs_ready
show "kubectl get ofs -n $NS"
show "kubectl exec -n $NS deploy/learning-client -- pvfs2-ping -m $MOUNT | tail -n 4"

stage "2. The calibration: probe MPIJobs measure the cost model's parameters"
wait_for "CostCalibration probe-4 finished" calibration_done
show "kubectl get cc -n $NS"
show "kubectl get cc probe-4 -n $NS -o jsonpath='{.status.fit}{\"\\n\"}'"
show "kubectl get cm probe-4-params -n $NS -o jsonpath='{.data.params\\.json}' | head -c 600; echo"

stage "3. A layout policy: one rule of each mode, applied as directory hints"
wait_for "LayoutPolicy layouts Ready" condition lp/layouts Ready
show "kubectl get lp layouts -n $NS"
show "kubectl get lp layouts -n $NS -o jsonpath='{range .status.rules[*]}{.path}{\"  \"}{.layout}{\"  \"}{.message}{\"\\n\"}{end}'"
show "kubectl exec -n $NS deploy/layouts-client -- pvfs2-xattr -t -k user.pvfs2.num_dfiles $MOUNT/results"

stage "4. An MPIJob that asked for nothing gets the shim"
wait_for "MPIJob ior-shared's launcher pod" launcher_exists
show "kubectl get mpijob ior-shared -n $NS -o jsonpath='{.metadata.annotations.pfslayout\\.io/injected}{\"\\n\"}'"
show "kubectl get pods -n $NS -l $launcher -o jsonpath='{range .items[0].spec.containers[0].env[*]}{.name}={.value}{\"\\n\"}{end}' | grep -E '^(LD_PRELOAD|PFSLAYOUT_|PVFS2TAB_FILE)'"
wait_for "MPIJob ior-shared Succeeded" condition mpijob/ior-shared Succeeded
show "kubectl logs -n $NS -l $launcher -c launcher --tail=-1 | grep -E '^(access +bw|write +[0-9]|read +[0-9])' | head -n 3"

stage "5. The layout learned from the job's own traces"
wait_for "LayoutPolicy learning's rule learned" condition lp/learning Learned
wait_for "LayoutPolicy learning's learned layout applied" condition lp/learning Ready
show "kubectl get lp learning -n $NS"
show "kubectl get lp learning -n $NS -o jsonpath='{.status.conditions[?(@.type==\"Learned\")].message}{\"\\n\"}'"
show "kubectl get lp learning -n $NS -o jsonpath='{range .status.rules[*]}{.path}{\"  \"}{.layout}{\"  \"}{.message}{\"\\n\"}{end}'"
show "kubectl exec -n $NS deploy/learning-client -- sh -c 'for k in dist_name dist_params num_dfiles; do pvfs2-xattr -t -k user.pvfs2.\$k $MOUNT/ior; done'"
