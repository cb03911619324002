# Shared settings of the e2e/cluster scripts: sourced, never run.
# Paths derive from this file's location and $HOME; nothing machine-specific is hard-coded.
# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this file

CLUSTER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CLUSTER_LIB_DIR/../../.." && pwd)
# shellcheck source=versions.env
. "$CLUSTER_LIB_DIR/versions.env"

CACHE_ROOT=${PFSLAYOUT_CACHE:-$HOME/.cache/pfs-layout-operator}
# -n1: the set of commands built (n1 adds kubelet and kube-proxy for the real node).
K8S_DIR=$CACHE_ROOT/k8s-$K8S_VERSION-n1
# Helm, kwok, the MPI Operator and CoreDNS are built in one Go module (build.sh, "tools"), so each one's
# build depends on all four versions and on our two entry points: one key over them names the module and
# the four directories, and a change to any of them rebuilds all four (mostly from the shared Go cache).
TOOLS_KEY=$( { echo "$HELM_VERSION $KWOK_VERSION $MPI_OPERATOR_VERSION $COREDNS_VERSION"
               cat "$CLUSTER_LIB_DIR/mpi-operator/main.go" "$CLUSTER_LIB_DIR/coredns/main.go"; } | sha256sum | cut -c1-8)
TOOLS_MODULE_DIR=$CACHE_ROOT/go/tools-$TOOLS_KEY
HELM_DIR=$CACHE_ROOT/helm-$HELM_VERSION-$TOOLS_KEY
# The -s3 suffix names the set of upstream Stages copied beside the binary: bump it when build.sh copies others.
KWOK_DIR=$CACHE_ROOT/kwok-$KWOK_VERSION-s3-$TOOLS_KEY
MPIOP_DIR=$CACHE_ROOT/mpi-operator-$MPI_OPERATOR_VERSION-$TOOLS_KEY
COREDNS_DIR=$CACHE_ROOT/coredns-$COREDNS_VERSION-$TOOLS_KEY
REGISTRY_DIR=$CACHE_ROOT/registry-$REGISTRY_DEB_VERSION
# The locally built kind node image's parts (e2e/harness/kind/): kubeadm and the control-plane images,
# then the CNI and storage images; each file inside carries its own key.
KIND_CP_DIR=$CACHE_ROOT/kind-cp-$K8S_VERSION
KIND_NET_DIR=$CACHE_ROOT/kind-net-$FLANNEL_VERSION-$LOCAL_PATH_PROVISIONER_VERSION
# The registry's blobs: a cache like containerd's root (node.sh), so a warm `up` pushes nothing new.
REGISTRY_STORE=$CACHE_ROOT/registry-store
# Go's own caches live beside the binaries so a warm machine rebuilds nothing and `rm -rf` of one
# directory cleans everything.
export GOCACHE=${PFSLAYOUT_GOCACHE:-$CACHE_ROOT/go/build}
export GOMODCACHE=${PFSLAYOUT_GOMODCACHE:-$CACHE_ROOT/go/mod}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

STATE_DIR=${PFSLAYOUT_E2E_STATE:-$REPO_ROOT/e2e/.state}
# Port map (documented in docs/test-cluster.md): every listener is on 127.0.0.1.
set_ports() {
  PORT_BASE=$1
  PORT_ETCD_CLIENT=$((PORT_BASE + 0))
  PORT_ETCD_PEER=$((PORT_BASE + 1))
  PORT_ETCD_METRICS=$((PORT_BASE + 2))
  PORT_APISERVER=$((PORT_BASE + 3))
  PORT_KCM=$((PORT_BASE + 4))
  PORT_SCHEDULER=$((PORT_BASE + 5))
  PORT_KWOK=$((PORT_BASE + 6))
  PORT_MPIOP=$((PORT_BASE + 7))
  # Not started by the cluster: reserved for the operator run as a local process (e2e/demo.sh, tests).
  PORT_OPERATOR_HEALTH=$((PORT_BASE + 8))
  PORT_OPERATOR_METRICS=$((PORT_BASE + 9))
  # The real node's local endpoints (kubelet itself and CoreDNS listen on the node's bridge address).
  PORT_KUBELET_HEALTH=$((PORT_BASE + 10))
  PORT_KUBE_PROXY_HEALTH=$((PORT_BASE + 11))
  PORT_KUBE_PROXY_METRICS=$((PORT_BASE + 12))
  PORT_COREDNS_HEALTH=$((PORT_BASE + 13))
  # The image registry (registry.sh): plain HTTP on loopback, where the real node's containerd pulls.
  PORT_REGISTRY=$((PORT_BASE + 14))
  REGISTRY_ADDR=127.0.0.1:$PORT_REGISTRY
  PORT_COUNT=15
}
# A running cluster's state directory records the port base it was started with: `down`, `env`,
# `status` and the demo address that cluster even when the caller's environment says otherwise.
use_state_ports() {
  local recorded
  recorded=$(sed -n 's/^PORT_BASE=//p' "$STATE_DIR/cluster.env" 2>/dev/null || true)
  [ -n "$recorded" ] && set_ports "$recorded"
  return 0
}
set_ports "${PFSLAYOUT_E2E_PORT_BASE:-26400}"

KUBECTL=$K8S_DIR/bin/kubectl
HELM=$HELM_DIR/bin/helm

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }
