#!/usr/bin/env bash
# The control-plane images of the locally built kind node image (docs/kind.md), without any registry:
#   <out>/bin/kubeadm          k8s.io/kubernetes/cmd/kubeadm, built as e2e/harness/cluster/build.sh builds the
#                              other Kubernetes binaries (its gen-wrapper.sh module, its flags and version stamps)
#   <out>/images/<short>.tar   OCI archives (images/build/oci.py) of every image `kubeadm config images list`
#                              names, made from the binaries build.sh already built (~/.cache/pfs-layout-operator)
#   <out>/kubeadm-images.yaml  the ClusterConfiguration fields that point kubeadm at our etcd and CoreDNS tags
#                              (their true versions; e2e/harness/kind/config.yaml carries the same patch)
# Idempotent: each output carries a key over its inputs and is rebuilt only when that key changes.
# Usage: cp-images.sh   (prints <out>; e2e/harness/kind/node-image.sh runs it)
set -euo pipefail

. "$(dirname "$0")/../cluster/lib.sh"
CP=$KIND_CP_DIR
REPO=$REPO_ROOT
K8S_BIN=$K8S_DIR/bin
OCI=$REPO/images/build/oci.py
NICE=(nice -n 10)
# kube-proxy's image: iptables (legacy and nft backends), nft for the nftables mode, conntrack for
# clearing UDP flows, ipset and kmod as upstream's distroless-iptables base carries them.
PROXY_PACKAGES=iptables,nftables,conntrack,ipset,kmod

log() { printf 'kind cp-images: %s\n' "$*" >&2; }
die() { printf 'kind cp-images: error: %s\n' "$*" >&2; exit 1; }
key() { sha256sum | cut -c1-16; }
# The contents of files, without their paths: a key must not change with the checkout's location (with
# `sha256sum FILE` every clone rebuilt every image, and the node image over them).
content() { local f; for f in "$@"; do sha256sum < "$f"; done; }
fresh() { [ -f "$1" ] && [ -f "$1.key" ] && [ "$(cat "$1.key")" = "$2" ]; }

for t in go jq mmdebstrap python3 gcc file flock; do  # mmdebstrap: base.sh --rootfs
  command -v "$t" >/dev/null || die "$t is not installed"
done
[ -f "$OCI" ] || die "$OCI is missing (PFSLAYOUT_REPO=$REPO)"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  [ -x "$K8S_BIN/$b" ] || die "$K8S_BIN/$b is missing: run $REPO/e2e/harness/cluster.sh build first"
done
COREDNS=$COREDNS_DIR/bin/coredns
[ -x "$COREDNS" ] || die "$COREDNS is missing: run $REPO/e2e/harness/cluster.sh build first"

mkdir -p "$CP/bin" "$CP/images" "$CP/build"
exec 9>"$CP/build.lock"
flock -w 1800 9 || die "another cp-images.sh holds $CP/build.lock"

# Go with lib.sh's settings and caches (shared with build.sh: kubeadm reuses the Kubernetes packages it compiled).
GOBUILD=(go build -trimpath -gcflags=all=-dwarf=false)

# ---- kubeadm -----------------------------------------------------------------------------------------
build_kubeadm() {
  local wrapper=$CP/build/wrapper etcd_version minor
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  rm -rf "$wrapper"
  etcd_version=$("$REPO/e2e/harness/cluster/gen-wrapper.sh" "$wrapper")
  log "wrapper module generated (upstream requires etcd $etcd_version)"
  (
    cd "$wrapper"
    go get "k8s.io/kubernetes/cmd/kubeadm@$K8S_VERSION" >&2
    # The stamps of build.sh's build_k8s: kubeadm picks its image tags from its own version. buildDate
    # is the release's time from the module's .info file (build_k8s reads .Time from `go mod download
    # -json`, which has no such field, and stamps "null").
    local date ld="-s -w" p
    date=$(jq -r .Time "$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .Info)")
    case $date in ""|null) die "no release time for k8s.io/kubernetes@$K8S_VERSION" ;; esac
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
    done
    "${NICE[@]}" "${GOBUILD[@]}" -ldflags "$ld" -o "$CP/build/kubeadm" k8s.io/kubernetes/cmd/kubeadm
  )
  [ "$("$CP/build/kubeadm" version -o short)" = "$K8S_VERSION" ] || die "kubeadm reports $("$CP/build/kubeadm" version -o short)"
  mv -f "$CP/build/kubeadm" "$CP/bin/kubeadm"
}
kubeadm_key=$( { echo "$K8S_VERSION $(go version)"; cat "$REPO/e2e/harness/cluster/gen-wrapper.sh";
                 declare -f build_kubeadm; } | key)
if fresh "$CP/bin/kubeadm" "$kubeadm_key" && [ "$("$CP/bin/kubeadm" version -o short)" = "$K8S_VERSION" ]; then
  log "kubeadm $K8S_VERSION is up to date"
else
  log "building kubeadm $K8S_VERSION (a few minutes cold on 2 cores)"
  start=$SECONDS
  build_kubeadm
  echo "$kubeadm_key" > "$CP/bin/kubeadm.key"
  log "kubeadm built in $((SECONDS - start)) s"
fi
KUBEADM=$CP/bin/kubeadm
"$KUBEADM" version >&2

# ---- the image names ---------------------------------------------------------------------------------
"$KUBEADM" config images list --kubernetes-version "$K8S_VERSION" > "$CP/images-list.txt"
declare -A WANT=()   # short name -> the full name kubeadm expects
while IFS= read -r img; do
  short=${img##*/}; short=${short%%:*}
  WANT[$short]=$img
done < "$CP/images-list.txt"
for s in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause; do
  [ -n "${WANT[$s]:-}" ] || die "kubeadm config images list names no $s image: $(tr '\n' ' ' < "$CP/images-list.txt")"
done
repo_of() { echo "${WANT[$1]%:*}"; }
tag_of() { echo "${WANT[$1]##*:}"; }
for s in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  [ "$(tag_of "$s")" = "$K8S_VERSION" ] || die "kubeadm wants ${WANT[$s]}, our binaries are $K8S_VERSION"
done

# The true versions of our etcd, CoreDNS and pause.
etcd_true=$("$K8S_BIN/etcd" --version | sed -n 's/^etcd Version: //p')
[ -n "$etcd_true" ] || die "cannot read the version of $K8S_BIN/etcd"
coredns_true=v$("$COREDNS" -version | sed -n 's/^CoreDNS-//p')
[ "$coredns_true" = "$COREDNS_VERSION" ] || die "$COREDNS reports $coredns_true, expected $COREDNS_VERSION"
k8s_src=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .Dir)
pause_c=$k8s_src/build/pause/linux/pause.c
pause_true=$(sed -n 's/^TAG ?= *//p' "$k8s_src/build/pause/Makefile")
[ "$pause_true" = "$(tag_of pause)" ] || die "pause.c of $K8S_VERSION is pause $pause_true, kubeadm wants ${WANT[pause]}"

declare -A NAME=(
  [kube-apiserver]=${WANT[kube-apiserver]} [kube-controller-manager]=${WANT[kube-controller-manager]}
  [kube-scheduler]=${WANT[kube-scheduler]} [kube-proxy]=${WANT[kube-proxy]}
  [etcd]=$(repo_of etcd):$etcd_true [coredns]=$(repo_of coredns):$coredns_true [pause]=${WANT[pause]}
)

# ---- images from static binaries ---------------------------------------------------------------------
# One layer as distroless/static has it, less what kubeadm mounts from the host (CA certificates):
# the binary, /etc/passwd and /etc/group (root, nobody, nonroot), nsswitch.conf (files before DNS), /tmp.
static_image() {
  local short=$1 bin=$2 dest=$3 entry=$4 k stage rootfs ftype
  ftype=$(file -b "$bin")
  case $ftype in *"statically linked"*) ;; *) die "$bin is not static ($ftype)" ;; esac
  k=$( { echo "${NAME[$short]} $dest $entry"; content "$bin" "$OCI"; declare -f static_image; } | key)
  if fresh "$CP/images/$short.tar" "$k"; then log "$short image is up to date"; return 0; fi
  log "image ${NAME[$short]}"
  stage=$CP/build/$short
  rm -rf "$stage"; mkdir -p "$stage/etc" "$stage/tmp" "$stage$(dirname "$dest")"
  chmod 1777 "$stage/tmp"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$stage/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' > "$stage/etc/group"
  echo 'hosts: files dns' > "$stage/etc/nsswitch.conf"
  chmod 0644 "$stage/etc/passwd" "$stage/etc/group" "$stage/etc/nsswitch.conf"
  install -m 0755 "$bin" "$stage$dest"
  rootfs=$CP/build/$short.rootfs.tar
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -C "$stage" -cf "$rootfs" .
  python3 "$OCI" rootfs "$rootfs" "$CP/images/$short.tar" --name "${NAME[$short]}" --entrypoint "$entry" \
    --history "$(basename "$bin") ($(basename "$(dirname "$(dirname "$bin")")")) at $dest, static (e2e/harness/kind/cp-images.sh)"
  rm -rf "$stage" "$rootfs"
  echo "$k" > "$CP/images/$short.tar.key"
}
for s in kube-apiserver kube-controller-manager kube-scheduler; do
  static_image "$s" "$K8S_BIN/$s" "/usr/local/bin/$s" "[\"/usr/local/bin/$s\"]"
done
static_image etcd "$K8S_BIN/etcd" /usr/local/bin/etcd '["/usr/local/bin/etcd"]'
# Upstream's CoreDNS image: ENTRYPOINT ["/coredns"]; kubeadm passes only args (-conf /etc/coredns/Corefile).
# It runs as root here (upstream: nonroot plus a file capability); kubeadm's Deployment drops every
# capability but NET_BIND_SERVICE and sets allowPrivilegeEscalation: false and a read-only root.
static_image coredns "$COREDNS" /coredns '["/coredns"]'

# ---- pause -------------------------------------------------------------------------------------------
pause_key=$( { echo "${NAME[pause]}"; content "$pause_c" "$OCI" "$REPO/images/build/pause.sh"; } | key)
if fresh "$CP/images/pause.tar" "$pause_key"; then
  log "pause image is up to date"
else
  log "image ${NAME[pause]} (images/build/pause.sh, pause.c of k8s.io/kubernetes@$K8S_VERSION)"
  "${NICE[@]}" "$REPO/images/build/pause.sh" "$CP/images/pause.tar" "${NAME[pause]}" "$pause_c"
  echo "$pause_key" > "$CP/images/pause.tar.key"
fi

# ---- kube-proxy --------------------------------------------------------------------------------------
# Debian bookworm minbase (`images/build/base.sh --rootfs`: the project's base image's root filesystem) with the packages above, kube-proxy at /usr/local/bin/kube-proxy, and an
# iptables wrapper like upstream's: the first iptables/ip6tables(-save/-restore) call picks the backend
# the node uses (kubelet's KUBE-IPTABLES-HINT chain, else the backend holding more rules) and repoints
# the alternatives at it.
wrapper_sh=$CP/build/iptables-wrapper
cat > "$wrapper_sh" <<'EOF'
#!/bin/sh
# iptables-wrapper (written by e2e/harness/kind/cp-images.sh): picks the node's iptables backend on first use.
set -eu
case ${0##*/} in
  iptables|iptables-save|iptables-restore|ip6tables|ip6tables-save|ip6tables-restore) ;;
  *) echo "iptables-wrapper: run it as iptables, ip6tables or their -save/-restore" >&2; exit 1 ;;
esac
hint() { { "iptables-$1-save" -t mangle; "ip6tables-$1-save" -t mangle; } 2>/dev/null | grep -c 'KUBE-IPTABLES-HINT' || true; }
rules() { { "iptables-$1-save"; "ip6tables-$1-save"; } 2>/dev/null | grep -c '^-' || true; }
if [ "$(hint nft)" -gt 0 ]; then mode=nft
elif [ "$(hint legacy)" -gt 0 ]; then mode=legacy
elif [ "$(rules legacy)" -gt "$(rules nft)" ]; then mode=legacy
else mode=nft
fi
for fam in iptables ip6tables; do
  for suffix in "" -save -restore; do
    ln -s "/usr/sbin/$fam-$mode$suffix" "/etc/alternatives/$fam$suffix.$$"
    mv -Tf "/etc/alternatives/$fam$suffix.$$" "/etc/alternatives/$fam$suffix"
  done
done
exec "$0" "$@"
EOF
chmod 0755 "$wrapper_sh"
mapfile -t sources < <("$REPO/images/build/base.sh" --sources)
[ ${#sources[@]} -gt 0 ] || die "base.sh --sources lists no apt sources file for bookworm"
proxy_key=$( { echo "${NAME[kube-proxy]} $PROXY_PACKAGES $(mmdebstrap --version)"
               cat "${sources[@]}" "$wrapper_sh" "$REPO/images/build/base.sh";
               content "$K8S_BIN/kube-proxy" "$OCI"; } | key)
if fresh "$CP/images/kube-proxy.tar" "$proxy_key"; then
  log "kube-proxy image is up to date"
else
  log "image ${NAME[kube-proxy]} (mmdebstrap bookworm minbase + $PROXY_PACKAGES)"
  rootfs=$CP/build/kube-proxy.rootfs.tar
  # shellcheck disable=SC2016  # "$1" is the hook's argument (the root directory), expanded by mmdebstrap
  hook_bin=$(printf 'install -m 0755 %q "$1/usr/local/bin/kube-proxy"' "$K8S_BIN/kube-proxy")
  # shellcheck disable=SC2016
  hook_wrap=$(printf 'install -m 0755 %q "$1/usr/sbin/iptables-wrapper"' "$wrapper_sh")
  # shellcheck disable=SC2016
  hook_alt='for n in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sfn /usr/sbin/iptables-wrapper "$1/etc/alternatives/$n"; done'
  "${NICE[@]}" "$REPO/images/build/base.sh" --rootfs "$rootfs" --include="$PROXY_PACKAGES" \
    --customize-hook="$hook_bin" --customize-hook="$hook_wrap" --customize-hook="$hook_alt"
  python3 "$OCI" rootfs "$rootfs" "$CP/images/kube-proxy.tar" --name "${NAME[kube-proxy]}" \
    --entrypoint '["/usr/local/bin/kube-proxy"]' \
    --history "mmdebstrap --variant=minbase --include=$PROXY_PACKAGES bookworm + kube-proxy $K8S_VERSION (e2e/harness/kind/cp-images.sh)"
  rm -f "$rootfs"
  echo "$proxy_key" > "$CP/images/kube-proxy.tar.key"
fi
rm -f "$wrapper_sh"

# ---- kubeadm configuration for our tags --------------------------------------------------------------
cat > "$CP/kubeadm-images.yaml" <<EOF
# Merge into the ClusterConfiguration (kind: kubeadmConfigPatches) so kubeadm uses the true tags.
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $K8S_VERSION
etcd:
  local:
    imageTag: "$etcd_true"
dns:
  imageTag: "$coredns_true"
EOF
"$KUBEADM" config images list --config "$CP/kubeadm-images.yaml" > "$CP/images-list-ours.txt"

# ---- verification ------------------------------------------------------------------------------------
verify() { python3 "$OCI" check "$CP/images/$1.tar" --name "${NAME[$1]}" --entrypoint "$2"; }
for s in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd; do
  verify "$s" "[\"/usr/local/bin/$s\"]"
done
verify coredns '["/coredns"]'
verify pause '["/pause"]'
for s in etcd coredns; do
  grep -qx "${NAME[$s]}" "$CP/images-list-ours.txt" || die "kubeadm-images.yaml does not make kubeadm ask for ${NAME[etcd]} and ${NAME[coredns]}"
done
log "done: $(tr '\n' ' ' < "$CP/images-list-ours.txt")"
echo "$CP"
