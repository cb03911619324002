#!/usr/bin/env bash
# The test cluster's one entry point.
#   e2e/harness/cluster.sh build    build/cache the pinned binaries (~/.cache/pfs-layout-operator/, by version) and,
#                           for the local cluster, the real node's images (images/build.sh)
#   e2e/harness/cluster.sh up       start the cluster (idempotent: returns at once when it already runs); prints
#                           `started` or `already-running` on stdout (all logging goes to stderr)
#   e2e/harness/cluster.sh down     stop everything `up` started, by PID, and check nothing is left
#   e2e/harness/cluster.sh env      print `export KUBECONFIG=… KUBECTL=… HELM=… PATH=…` (eval "$(e2e/harness/cluster.sh env)")
#   e2e/harness/cluster.sh status   what runs (exit 0 when all of it does, 3 otherwise)
#   e2e/harness/cluster.sh images   rebuild what changed under images/ and push it to the running cluster's registry
#   e2e/harness/cluster.sh restart etcd|kube-apiserver   kill one control-plane process by PID (SIGKILL, a crash) and start it
#                           again with the same arguments (the fault tests of issue 14)
#   e2e/harness/cluster.sh leftovers  what a stopped cluster left behind, one line each: kind's node containers,
#                           network, loaded node image and host processes; or the local real node's (processes, mounts,
#                           cgroups, the bridge, iptables chains, changed sysctls), one line each
# Where a container engine answers (Docker, or podman: kind's podman provider and a node image built here)
# the cluster is kind, one control plane and three workers (e2e/harness/kind/config.yaml, docs/kind.md);
# without one it is a local control plane with a real node and kwok nodes (docs/test-cluster.md).
# PFSLAYOUT_E2E_MODE=local|kind forces one. PFSLAYOUT_E2E_STATE and PFSLAYOUT_E2E_PORT_BASE select an
# independent cluster (state directory, 10 consecutive ports on 127.0.0.1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster/lib.sh"

mode=${PFSLAYOUT_E2E_MODE:-}
# `build` touches no cluster: any mode may build beside a running one.
if [ "${1:-}" != build ] && [ -n "$mode" ] && [ -f "$STATE_DIR/mode" ] && [ "$(cat "$STATE_DIR/mode")" != "$mode" ]; then
  die "$STATE_DIR holds a $(cat "$STATE_DIR/mode") cluster, not $mode: stop it first (e2e/harness/cluster.sh down) or set PFSLAYOUT_E2E_STATE to another directory"
fi
engine_answers() {
  { command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; } \
    || { command -v podman >/dev/null && timeout 20 podman info >/dev/null 2>&1; }
}
if [ -z "$mode" ]; then
  # A state directory remembers which kind of cluster it holds, so `down` never guesses. Otherwise kind
  # wherever a container engine answers (Docker, or podman: kind's podman provider), the local control
  # plane elsewhere.
  if [ -f "$STATE_DIR/mode" ]; then mode=$(cat "$STATE_DIR/mode")
  elif engine_answers; then mode=kind
  else
    mode=local
    # The local cluster's real node is containerd, a kubelet and a bridge on this machine: root only.
    if [ "${1:-}" = up ] && [ "$(id -u)" -ne 0 ] && [ "${PFSLAYOUT_E2E_REAL_NODE:-1}" = 1 ]; then
      die "no container engine answers (docker info, podman info) for a kind cluster, and the local cluster's real node needs root: install podman (apt-get install podman netavark aardvark-dns) or Docker, or run as root"
    fi
  fi
fi
case $mode in local|kind) ;; *) die "PFSLAYOUT_E2E_MODE must be local or kind, not '$mode'" ;; esac

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  build)
    # kind needs what the local cluster needs (Kubernetes and CoreDNS also go into a locally built node
    # image; the registry, kwok and the MPI Operator run beside the nodes; the images are pushed) and
    # then kind itself and its node image.
    if [ $# -gt 0 ]; then "$here/cluster/build.sh" "$@"
    else
      # The real node's images (buildah, cached by content: a no-op when nothing changed). The operator
      # image (and the base under it) needs none of the builds below, and making it mostly waits on the
      # Debian mirror and PyPI (mmdebstrap, apt, pip): it goes beside the CPU-bound Go builds instead of
      # after them (cold, it was 3 of the 5 image minutes at the end of the critical path); the rest
      # waits for them (pause reads the Kubernetes module) and for the OrangeFS trees (images/build.sh's
      # lock serialises the two calls).
      images_pid=
      real_node=${PFSLAYOUT_E2E_REAL_NODE:-1}
      if [ "$real_node" = 1 ] && [[ " ${PFSLAYOUT_E2E_IMAGES:-all} " =~ \ (all|operator)\  ]]; then
        "$REPO_ROOT/images/build.sh" operator >/dev/null &
        images_pid=$!
        # shellcheck disable=SC2064  # the PID now
        trap "kill $images_pid 2>/dev/null || true" EXIT
      fi
      "$here/cluster/build.sh"
      if [ -n "$images_pid" ]; then
        wait "$images_pid" || die "images/build.sh operator failed (above)"
        trap - EXIT
      fi
      if [ "$real_node" = 1 ]; then
        # shellcheck disable=SC2086  # a list of image names
        "$REPO_ROOT/images/build.sh" ${PFSLAYOUT_E2E_IMAGES:-all} >/dev/null
      fi
      if [ "$mode" = kind ]; then "$here/cluster/kind.sh" build; fi
    fi ;;
  up|down)
    [ "$cmd" = up ] && "$here/cluster.sh" build
    # One `up` or `down` at a time per state directory (two test sessions starting together must not
    # both start a cluster). `up` empties the directory but keeps its dot-files (the locks).
    mkdir -p "$STATE_DIR"
    exec 8>"$STATE_DIR/.lock"
    flock -w 600 8 || die "timed out waiting for $STATE_DIR/.lock (another up/down of this cluster)"
    "$here/cluster/$mode.sh" "$cmd"
    if [ "$cmd" = up ]; then echo "$mode" > "$STATE_DIR/mode"; else rm -f "$STATE_DIR/mode"; fi ;;
  status|env)
    if [ "$mode" = local ]; then "$here/cluster/local.sh" "$cmd"; else "$here/cluster/kind.sh" "$cmd"; fi ;;
  images) "$here/cluster/$mode.sh" images ;;
  leftovers) "$here/cluster/$mode.sh" leftovers ;;
  restart)
    [ "$mode" = local ] || die "restart: only the local control plane's processes can be restarted"
    "$here/cluster/local.sh" restart "$@" ;;
  *) die "usage: e2e/harness/cluster.sh build|up|down|env|status|leftovers|images|restart COMPONENT" ;;
esac
