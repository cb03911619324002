#!/usr/bin/env bash
# Builds the local test cluster's binaries from the Go module proxy at the versions in versions.env,
# into ~/.cache/pfs-layout-operator/<component>-<version>/. Each component is installed atomically and
# stamped; a stamped component is skipped, so a warm run does nothing. Concurrent runs (several
# engineers, the test command) serialise on a lock file, one component at a time, instead of building twice.
# Usage: build.sh [helm|k8s|kwok|mpi-operator|coredns|registry ...]   (default: all, Kubernetes first)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "Go is not installed: the local control plane is built from the Go module proxy (install golang >= 1.26)"
command -v jq >/dev/null || die "jq is not installed (apt-get install jq)"
mkdir -p "$CACHE_ROOT" "$GOCACHE" "$GOMODCACHE"

# -s -w (in each -ldflags): no symbol tables (binaries are ~40% smaller); -trimpath: no cache paths inside
# them; -dwarf=false: the compiler skips the debug information the linker's -w would drop anyway
# (kwok cold: 244 s of CPU instead of 277, the mean of two runs each).
GOBUILD=(go build -trimpath -gcflags=all=-dwarf=false)

installed() { [ -f "$1/.complete" ]; }

# Builds into a fresh temporary directory and renames it into place, so an interrupted build never
# leaves a half-populated cache directory that later runs would trust.
begin() { tmp="$1.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin"; }
commit() { touch "$tmp/.complete"; rm -rf "$1"; mv "$tmp" "$1"; }

k8s_minor() { local v=${1#v}; v=${v#0.}; v=${v#1.}; echo "${v%%.*}"; }

# Helm, kwok, the MPI Operator and CoreDNS: one throwaway Go module that requires the four pinned releases
# (and holds our two entry points), so Go's minimal version selection picks one version of everything
# they share — client-go, apimachinery, api, grpc, protobuf, otel — and each shared package is compiled
# once instead of four times. Cold on 2 idle cores: 425 s of CPU (255 s) instead of 905 s (530 s) built
# in four modules; kwok, the MPI Operator and CoreDNS after Helm took 113 s instead of 399 s. The price:
# Helm and the MPI Operator link a newer client-go than their own go.mod asks (the highest of the four,
# CoreDNS's); the e2e tier runs them for real. The Kubernetes binaries stay in a module of their own
# (gen-wrapper.sh), built with exactly the versions upstream tested.
tools_module() {
  [ -f "$TOOLS_MODULE_DIR/.complete" ] && return 0
  local dir="$TOOLS_MODULE_DIR.tmp.$$" go_line
  rm -rf "$dir"; mkdir -p "$dir/mpi-operator" "$dir/coredns"
  cp "$CLUSTER_LIB_DIR/mpi-operator/main.go" "$dir/mpi-operator/"
  cp "$CLUSTER_LIB_DIR/coredns/main.go" "$dir/coredns/"
  # The commands built from upstream's own main packages, kept in the module's requirements by `go mod tidy`.
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "helm.sh/helm/v3/cmd/helm"\n\t_ "sigs.k8s.io/kwok/cmd/kwok"\n)\n' \
    > "$dir/tools.go"
  # The highest `go` line of the four (a module's go line must cover its requirements').
  go_line=$(for m in "helm.sh/helm/v3@$HELM_VERSION" "sigs.k8s.io/kwok@$KWOK_VERSION" \
                     "github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" "github.com/coredns/coredns@$COREDNS_VERSION"; do
              go mod edit -json "$(go mod download -json "$m" | jq -r .GoMod)" | jq -r .Go
            done | sort -V | tail -n 1)
  printf 'module pfslayout.local/cluster-tools\n\ngo %s\n' "$go_line" > "$dir/go.mod"
  (
    cd "$dir"
    go mod edit -require="helm.sh/helm/v3@$HELM_VERSION" -require="sigs.k8s.io/kwok@$KWOK_VERSION" \
      -require="github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" -require="github.com/coredns/coredns@$COREDNS_VERSION"
    go mod tidy >&2
  )
  touch "$dir/.complete"; rm -rf "$TOOLS_MODULE_DIR"; mv "$dir" "$TOOLS_MODULE_DIR"
}

# go build of one command of the tools module into $tmp/bin/<name>.
build_tool() {
  local name=$1 pkg=$2 ld=$3
  tools_module
  (cd "$TOOLS_MODULE_DIR" && "${GOBUILD[@]}" -ldflags "$ld" -o "$tmp/bin/$name" "$pkg")
}

build_helm() {
  installed "$HELM_DIR" && return 0
  log "building Helm $HELM_VERSION (~2 min cold)"
  begin "$HELM_DIR"
  local mod client_go minor
  mod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | jq -r .GoMod)
  client_go=$(go mod edit -json "$mod" | jq -r '.Require[] | select(.Path == "k8s.io/client-go") | .Version')
  minor=$(k8s_minor "$client_go")
  # The same stamps Helm's Makefile sets: its version, and the Kubernetes version `helm template` and
  # `helm lint` assume when no cluster is asked (.Capabilities.KubeVersion), from Helm's own go.mod.
  local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
  ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
  build_tool helm helm.sh/helm/v3/cmd/helm "$ld"
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
  log "building kwok $KWOK_VERSION (~40 s cold after Helm)"
  begin "$KWOK_DIR"
  build_tool kwok sigs.k8s.io/kwok/cmd/kwok "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
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

build_coredns() {
  installed "$COREDNS_DIR" && return 0
  log "building CoreDNS $COREDNS_VERSION with the plugins of the two Corefiles (~15 s cold after the others)"
  begin "$COREDNS_DIR"
  # Our own entry point (coredns/main.go says why), over the pinned release.
  build_tool coredns ./coredns "-s -w"
  "$tmp/bin/coredns" -plugins | grep -x 'kubernetes' >/dev/null || die "CoreDNS built without its kubernetes plugin"
  "$tmp/bin/coredns" -version >&2
  commit "$COREDNS_DIR"
}

build_mpi_operator() {
  installed "$MPIOP_DIR" && return 0
  log "building MPI Operator $MPI_OPERATOR_VERSION controller (~1 min cold after Helm)"
  begin "$MPIOP_DIR"
  # Our own entry point (mpi-operator/main.go says why), over the pinned release.
  build_tool mpi-operator ./mpi-operator "-s -w"
  local src
  src=$(go mod download -json "github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" | jq -r .Dir)
  mkdir -p "$tmp/crd"
  cp "$src/manifests/base/kubeflow.org_mpijobs.yaml" "$tmp/crd/"
  chmod -R u+w "$tmp/crd"
  commit "$MPIOP_DIR"
}

# The image registry is not built: Debian 12 packages the CNCF distribution registry (docker-registry).
# Its binary is taken out of the .deb (apt-get download, no root), so no service is installed or started
# (the package's own would listen on every interface's port 5000).
build_registry() {
  installed "$REGISTRY_DIR" && return 0
  log "fetching the distribution registry (Debian docker-registry $REGISTRY_DEB_VERSION)"
  begin "$REGISTRY_DIR"
  if ! (cd "$tmp" && apt-get download "docker-registry=$REGISTRY_DEB_VERSION" >/dev/null 2>"$tmp/apt.log"); then
    die "apt-get download docker-registry=$REGISTRY_DEB_VERSION failed ($(tail -n 1 "$tmp/apt.log")): run apt-get update, or set REGISTRY_DEB_VERSION in versions.env to the version apt-cache policy docker-registry offers"
  fi
  dpkg-deb -x "$tmp"/docker-registry_*.deb "$tmp/pkg"
  mv "$tmp/pkg/usr/bin/docker-registry" "$tmp/bin/registry"
  rm -rf "$tmp/pkg" "$tmp"/*.deb "$tmp/apt.log"
  "$tmp/bin/registry" --version >&2
  commit "$REGISTRY_DIR"
}

components=("$@")
# Kubernetes first: it is the longest, and the images wait for it (pause reads its module); Helm with the
# other three tools after it. A cold run measured with Helm first (a33672c, 2026-11-29): the cluster was up
# 3.3 minutes later, the other tiers, which wait for Helm, having started 3.3 minutes earlier beside it.
[ ${#components[@]} -gt 0 ] || components=(k8s helm kwok mpi-operator coredns registry)

dir_of() {
  case $1 in
    helm) echo "$HELM_DIR" ;;
    k8s) echo "$K8S_DIR" ;;
    kwok) echo "$KWOK_DIR" ;;
    mpi-operator) echo "$MPIOP_DIR" ;;
    coredns) echo "$COREDNS_DIR" ;;
    registry) echo "$REGISTRY_DIR" ;;
    *) die "unknown component '$1' (expected helm, k8s, kwok, mpi-operator, coredns or registry)" ;;
  esac
}
for c in "${components[@]}"; do dir_of "$c" >/dev/null; done

# The lock is held one component at a time, and an installed component is skipped before it is asked for:
# the test command's background build of everything starts with Helm, and the foreground asks for Helm
# alone before the tiers that run it — it gets Helm as soon as that is built, not after Kubernetes.
exec 9>"$CACHE_ROOT/build.lock"
for c in "${components[@]}"; do
  installed "$(dir_of "$c")" && continue
  if ! flock -n 9; then
    log "another build holds $CACHE_ROOT/build.lock; waiting for it (up to 30 min) before $c"
    flock -w 1800 9 || die "timed out waiting for the build lock"
  fi
  case $c in
    helm) build_helm ;;
    k8s) build_k8s ;;
    kwok) build_kwok ;;
    mpi-operator) build_mpi_operator ;;
    coredns) build_coredns ;;
    registry) build_registry ;;
  esac
  flock -u 9
done
