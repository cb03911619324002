#!/usr/bin/env bash
# Builds the local test cluster's binaries from the Go module proxy at the versions in versions.env,
# into ~/.cache/pfs-layout-operator/<component>-<version>/. Each component is installed atomically and
# stamped; a stamped component is skipped, so a warm run does nothing. Concurrent runs (several
# engineers, the test command) serialise on a lock file instead of building twice.
# Usage: build.sh [helm|k8s|kwok|mpi-operator|coredns ...]   (default: all, Helm first)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "Go is not installed: the local control plane is built from the Go module proxy (install golang >= 1.26)"
command -v jq >/dev/null || die "jq is not installed (apt-get install jq)"
mkdir -p "$CACHE_ROOT" "$GOCACHE" "$GOMODCACHE"

# -s -w: no symbol tables (binaries are ~40% smaller); -trimpath: no cache paths inside them.
GOBUILD=(go build -trimpath)

installed() { [ -f "$1/.complete" ]; }

# Builds into a fresh temporary directory and renames it into place, so an interrupted build never
# leaves a half-populated cache directory that later runs would trust.
begin() { tmp="$1.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin"; }
commit() { touch "$tmp/.complete"; rm -rf "$1"; mv "$tmp" "$1"; }

k8s_minor() { local v=${1#v}; v=${v#0.}; v=${v#1.}; echo "${v%%.*}"; }

build_helm() {
  installed "$HELM_DIR" && return 0
  log "building Helm $HELM_VERSION (~80 s cold)"
  begin "$HELM_DIR"
  local mod client_go minor
  mod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | jq -r .GoMod)
  client_go=$(go mod edit -json "$mod" | jq -r '.Require[] | select(.Path == "k8s.io/client-go") | .Version')
  minor=$(k8s_minor "$client_go")
  # The same stamps Helm's Makefile sets: its version, and the Kubernetes version `helm template` and
  # `helm lint` assume when no cluster is asked (.Capabilities.KubeVersion).
  local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
  ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
  GOBIN="$tmp/bin" go install -trimpath -ldflags "$ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  "$tmp/bin/helm" version --short >&2
  commit "$HELM_DIR"
}

build_k8s() {
  installed "$K8S_DIR" && return 0
  log "building Kubernetes $K8S_VERSION control plane, kubelet, kube-proxy, etcd, kubectl (~7 min cold on 2 cores)"
  begin "$K8S_DIR"
  local wrapper="$tmp/wrapper" etcd_version
  etcd_version=$("$CLUSTER_LIB_DIR/gen-wrapper.sh" "$wrapper")
  # kubelet and kube-proxy run the real node (docs/test-cluster.md, "The real node").
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
  local pkgs=("${cmds[@]/#/k8s.io/kubernetes/cmd/}")
  (
    cd "$wrapper"
    go get "${pkgs[@]/%/@$K8S_VERSION}" "go.etcd.io/etcd/server/v3@$etcd_version" >&2
    # Without these stamps the server reports v0.0.0-master: kubectl's skew checks and Helm's
    # kubeVersion constraints then fail. client-go's copy is stamped too (older releases read it).
    local minor date ld="-s -w" p
    minor=$(k8s_minor "$K8S_VERSION")
    date=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .Time)
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
    done
    "${GOBUILD[@]}" -ldflags "$ld" -o "$tmp/bin/" "${pkgs[@]}"
    "${GOBUILD[@]}" -ldflags "-s -w" -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3
  )
  echo "$etcd_version" > "$tmp/etcd-version"
  "$tmp/bin/kube-apiserver" --version >&2
  commit "$K8S_DIR"
}

build_kwok() {
  installed "$KWOK_DIR" && return 0
  log "building kwok $KWOK_VERSION (~90 s cold)"
  begin "$KWOK_DIR"
  GOBIN="$tmp/bin" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # The binary has no Stages built in; upstream ships them in the module. Copied from the module
  # cache at build time (not committed): node lifecycle, heartbeat by Lease, and pod lifecycle.
  local src
  src=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | jq -r .Dir)/kustomize/stage
  mkdir -p "$tmp/stages"
  cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
     "$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-delete.yaml" \
     "$src/volume/fast/pvc-provision.yaml" "$src/volume/fast/pv-bind.yaml" \
     "$src/volume/fast/pvc-delete.yaml" "$src/volume/fast/pv-delete.yaml" \
     "$tmp/stages/"
  # The default StorageClass those volume Stages provision for (PVCs bind at once; nothing is stored).
  mkdir -p "$tmp/manifests"
  cp "$src/volume/fast/storage-class.yaml" "$tmp/manifests/"
  chmod -R u+w "$tmp/stages" "$tmp/manifests"
  commit "$KWOK_DIR"
}

# Our own entry point ($CLUSTER_LIB_DIR/<dir>/main.go: each says why) over the pinned release of a module,
# built in a throwaway module that requires it, into $tmp/bin/<dir>.
build_entry_point() {
  local dir=$1 module=$2 version=$3 src go_line
  src=$(go mod download -json "$module@$version" | jq -r .Dir)
  go_line=$(go mod edit -json "$src/go.mod" | jq -r .Go)
  mkdir -p "$tmp/wrapper"
  cp "$CLUSTER_LIB_DIR/$dir/main.go" "$tmp/wrapper/"
  printf 'module pfslayout.local/%s-host\n\ngo %s\n' "$dir" "$go_line" > "$tmp/wrapper/go.mod"
  (
    cd "$tmp/wrapper"
    go mod edit -require="$module@$version"
    go mod tidy >&2
    "${GOBUILD[@]}" -ldflags "-s -w" -o "$tmp/bin/$dir" .
  )
  rm -rf "$tmp/wrapper"
}

build_coredns() {
  installed "$COREDNS_DIR" && return 0
  log "building CoreDNS $COREDNS_VERSION with the Corefile's five plugins (~1 CPU-min cold)"
  begin "$COREDNS_DIR"
  build_entry_point coredns github.com/coredns/coredns "$COREDNS_VERSION"
  "$tmp/bin/coredns" -plugins | grep -x 'kubernetes' >/dev/null || die "CoreDNS built without its kubernetes plugin"
  "$tmp/bin/coredns" -version >&2
  commit "$COREDNS_DIR"
}

build_mpi_operator() {
  installed "$MPIOP_DIR" && return 0
  log "building MPI Operator $MPI_OPERATOR_VERSION controller (~2 min cold)"
  begin "$MPIOP_DIR"
  build_entry_point mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION"
  local src
  src=$(go mod download -json "github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" | jq -r .Dir)
  mkdir -p "$tmp/crd"
  cp "$src/manifests/base/kubeflow.org_mpijobs.yaml" "$tmp/crd/"
  chmod -R u+w "$tmp/crd"
  commit "$MPIOP_DIR"
}

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(helm k8s kwok mpi-operator coredns)

exec 9>"$CACHE_ROOT/build.lock"
if ! flock -n 9; then
  log "another build holds $CACHE_ROOT/build.lock; waiting (up to 30 min)"
  flock -w 1800 9 || die "timed out waiting for the build lock"
fi
for c in "${components[@]}"; do
  case $c in
    helm) build_helm ;;
    k8s) build_k8s ;;
    kwok) build_kwok ;;
    mpi-operator) build_mpi_operator ;;
    coredns) build_coredns ;;
    *) die "unknown component '$c' (expected helm, k8s, kwok, mpi-operator or coredns)" ;;
  esac
done
