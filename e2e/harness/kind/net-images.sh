#!/usr/bin/env bash
# The CNI (flannel, host-gw) and storage (rancher's local-path-provisioner) images of the locally built kind
# node image (docs/kind.md), without any registry, and their manifests:
#   <out>/images/flannel.tar                localhost/pfslayout/flannel:<FLANNEL_VERSION> (bookworm minbase + iptables, ...)
#   <out>/images/local-path-provisioner.tar localhost/pfslayout/local-path-provisioner:<version> (the binary only)
#   <out>/images/local-path-helper.tar      localhost/pfslayout/local-path-helper:bookworm (bookworm minbase)
#   <out>/manifests/storage.yaml            generated from kind's pkg/build/nodeimage/const_storage.go
#   e2e/harness/kind/flannel.yaml           hand-written (source, not generated): only validated here
# Inputs: Go modules from the module proxy (versions.env), Debian bookworm packages through this machine's
# apt sources (mmdebstrap, as images/build/base.sh does), images/build/oci.py to pack OCI archives.
# Every step is skipped when its output exists and its recorded key (inputs) is unchanged: work/*.key.
# Usage: net-images.sh   (prints <out>)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/lib.sh"
out=$KIND_NET_DIR
mkdir -p "$out"
cd "$out"

OCI=$REPO_ROOT/images/build/oci.py
BASE_SH=$REPO_ROOT/images/build/base.sh
SUITE=bookworm
REPO=localhost/pfslayout

FLANNEL_MOD=github.com/flannel-io/flannel
FLANNEL_IMAGE=$REPO/flannel:$FLANNEL_VERSION
# upstream images/Dockerfile installs (alpine) iproute2 ca-certificates nftables iptables strongswan
# iptables-legacy wireguard-tools; Debian's iptables has both the legacy and the nft binaries. strongswan is
# left out: only the ipsec backend uses it (this cluster uses host-gw).
FLANNEL_PACKAGES=iptables,nftables,iproute2,ca-certificates,wireguard-tools

LPP_MOD=github.com/rancher/local-path-provisioner
LPP_VERSION=$LOCAL_PATH_PROVISIONER_VERSION
LPP_IMAGE=$REPO/local-path-provisioner:$LPP_VERSION
HELPER_IMAGE=$REPO/local-path-helper:$SUITE

KIND_MOD=sigs.k8s.io/kind

mkdir -p bin images manifests work

log() { printf 'kind net-images: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for c in go jq mmdebstrap python3 tar; do command -v "$c" >/dev/null || die "$c is not installed"; done
[ -f "$OCI" ] || die "$OCI not found"

# key_of ARGS...: a short hash of the arguments (strings, and the content of those that are files)
key_of() {
  local a
  for a in "$@"; do
    if [ -f "$a" ]; then sha256sum <"$a"; else printf '%s\n' "$a"; fi
  done | sha256sum | cut -c1-16
}
# fresh OUT KEY: OUT exists and was built from inputs with this KEY
fresh() { [ -e "$1" ] && [ "$(cat "work/$(basename "$1").key" 2>/dev/null)" = "$2" ]; }
record() { printf '%s\n' "$2" >"work/$(basename "$1").key"; }

# mod_dir MODULE@VERSION: downloads the module (proxy) and prints its directory in the module cache
mod_dir() {
  local json
  json=$(go mod download -json "$1") || die "go mod download $1: $(jq -r '.Error // empty' <<<"$json")"
  jq -r .Dir <<<"$json"
}

# rootfs OUT PACKAGES: the project's bookworm minbase root filesystem tar (`base.sh --rootfs`) with PACKAGES
# (a comma list, may be empty)
rootfs() {
  local out=$1 pkgs=$2 key tmp
  local -a sources include=()
  mapfile -t sources < <("$BASE_SH" --sources)
  key=$(key_of rootfs "$SUITE" "$pkgs" "$BASE_SH" "${sources[@]}")
  if fresh "$out" "$key"; then log "$out: up to date"; return; fi
  if [ -n "$pkgs" ]; then include=(--include="$pkgs"); fi
  log "$out: base.sh --rootfs ${include[*]}"
  tmp=$(mktemp "work/.rootfs.XXXXXX")
  nice -n 10 "$BASE_SH" --rootfs "$tmp" "${include[@]}"
  mv -f "$tmp" "$out"
  record "$out" "$key"
}

# ---------------------------------------------------------------------------------------------- flannel
# go_binary NAME MODULE VERSION CGO LDFLAGS [GO BUILD FLAGS...]: bin/NAME built from the module's root package
go_binary() {
  local name=$1 module=$2 version=$3 cgo=$4 ldflags=$5 dir key
  shift 5
  dir=$(mod_dir "$module@$version")
  key=$(key_of "$name" "$version" "$(go version)" "$cgo" "$ldflags" "$*")
  if fresh "bin/$name" "$key"; then log "bin/$name: up to date"; return; fi
  log "bin/$name: go build ($module@$version)"
  (cd "$dir" && CGO_ENABLED=$cgo nice -n 10 go build -trimpath "$@" -ldflags "$ldflags" -o "$out/bin/.$name.tmp" .)
  mv -f "bin/.$name.tmp" "bin/$name"
  record "bin/$name" "$key"
}

build_flanneld() {
  # Makefile (dist/flanneld): CGO_ENABLED=1 on amd64 (the UDP backend's C proxy), -ldflags '-s -w
  # -X .../pkg/version.Version=$(TAG) -extldflags "-static"'. CGO_ENABLED=0 does not build on amd64
  # (pkg/backend/udp: undefined: runCProxy, ...), so cgo stays on; netgo,osusergo keep glibc's NSS out of
  # the static binary (no getaddrinfo/getpwnam warnings, no run-time dependence on libnss).
  go_binary flanneld "$FLANNEL_MOD" "$FLANNEL_VERSION" 1 \
    "-s -w -X $FLANNEL_MOD/pkg/version.Version=$FLANNEL_VERSION -extldflags \"-static\"" -tags netgo,osusergo
}

flannel_image() {
  local dir key out=images/flannel.tar
  dir=$(mod_dir "$FLANNEL_MOD@$FLANNEL_VERSION")
  rootfs work/flannel-rootfs.tar "$FLANNEL_PACKAGES"
  key=$(key_of image "$FLANNEL_IMAGE" work/flannel-rootfs.tar bin/flanneld "$dir/dist/mk-docker-opts.sh" "$OCI")
  if fresh "$out" "$key"; then log "$out: up to date"; return; fi
  log "$out: rootfs + /opt/bin/{flanneld,mk-docker-opts.sh}"
  # one layer, as oci.py rootfs packs it: the mmdebstrap tar with /opt/bin appended (root-owned, mtime 0)
  rm -rf work/flannel-opt && mkdir -p work/flannel-opt/opt/bin
  install -m 0755 bin/flanneld "$dir/dist/mk-docker-opts.sh" work/flannel-opt/opt/bin/
  cp work/flannel-rootfs.tar work/flannel-layer.tar
  tar -C work/flannel-opt --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -rf work/flannel-layer.tar ./opt/bin
  nice -n 10 python3 "$OCI" rootfs work/flannel-layer.tar "$out" --name "$FLANNEL_IMAGE" \
    --entrypoint '["/opt/bin/flanneld"]' \
    --history "mmdebstrap --variant=minbase --include=$FLANNEL_PACKAGES $SUITE + flanneld $FLANNEL_VERSION"
  rm -rf work/flannel-opt work/flannel-layer.tar
  record "$out" "$key"
}

# ---------------------------------------------------------------------------------------------- storage
build_lpp() {
  # scripts/build: CGO_ENABLED=0 go build -ldflags "-X main.VERSION=$VERSION -extldflags -static -s -w"
  # (the module zip keeps only vendor/modules.txt, not the vendored packages: -mod=mod, modules from the proxy)
  go_binary local-path-provisioner "$LPP_MOD" "$LPP_VERSION" 0 "-X main.VERSION=$LPP_VERSION -extldflags -static -s -w" \
    -mod=mod
}

lpp_image() {
  local key out=images/local-path-provisioner.tar
  key=$(key_of image "$LPP_IMAGE" bin/local-path-provisioner "$OCI")
  if fresh "$out" "$key"; then log "$out: up to date"; return; fi
  log "$out: /usr/local/bin/local-path-provisioner"
  # kind's images/local-path-provisioner/Dockerfile: distroless/static + the binary at
  # /usr/local/bin/local-path-provisioner, ENTRYPOINT /usr/local/bin/local-path-provisioner (here in exec
  # form: there is no shell in the image); the manifest's command overrides it anyway
  nice -n 10 python3 "$OCI" rootfs-files "$out" --name "$LPP_IMAGE" \
    --file bin/local-path-provisioner:/usr/local/bin/local-path-provisioner:0755 \
    --entrypoint '["/usr/local/bin/local-path-provisioner"]' \
    --history "local-path-provisioner $LPP_VERSION (CGO_ENABLED=0)"
  record "$out" "$key"
}

helper_image() {
  local key out=images/local-path-helper.tar
  local -a sources
  # kind's images/local-path-helper stages sh, rm and mkdir (the helper pod runs `/bin/sh /script/setup`
  # or teardown, which use mkdir and rm): the project's base image has them all
  mapfile -t sources < <("$BASE_SH" --sources)
  key=$(key_of image "$HELPER_IMAGE" "$BASE_SH" "$OCI" "${sources[@]}")
  if fresh "$out" "$key"; then log "$out: up to date"; return; fi
  log "$out: images/build/base.sh"
  nice -n 10 "$BASE_SH" "$out" "$HELPER_IMAGE"
  record "$out" "$key"
}

storage_manifest() {
  local dir out=manifests/storage.yaml
  dir=$(mod_dir "$KIND_MOD@$KIND_VERSION")
  log "$out: from $KIND_MOD@$KIND_VERSION pkg/build/nodeimage/const_storage.go"
  python3 - "$dir/pkg/build/nodeimage/const_storage.go" "$out" "$LPP_IMAGE" "$HELPER_IMAGE" \
    "$KIND_VERSION" "$LPP_VERSION" <<'PY'
import os, sys
src, out, lpp, helper, kind_version, lpp_version = sys.argv[1:]
go = open(src).read()
marker = "const defaultStorageManifest = `"
if go.count(marker) != 1:
    sys.exit(f"{src}: defaultStorageManifest not found")
# the manifest is the file's last Go raw string, split around the image constants:
# ...` + storageProvisionerImage + `...
body = go[go.index(marker) + len(marker):]
body = body[:body.rindex("`")]
def sub(text, old, new, count):
    n = text.count(old)
    if n != count:
        sys.exit(f"{src}: expected {count} x {old!r}, found {n} (kind's manifest changed: review the adaptation)")
    return text.replace(old, new)
body = sub(body, "` + storageProvisionerImage + `", lpp, 1)
body = sub(body, "` + storageHelperImage + `", helper, 2)
# both images are pre-loaded into every node and no registry is reachable: never try to pull
body = sub(body, "imagePullPolicy: IfNotPresent", "imagePullPolicy: Never", 2)
if "`" in body:
    sys.exit(f"{src}: unexpected Go string concatenation left in the manifest")
header = f"""\
# kind's default storage (local-path-provisioner, default StorageClass `standard`), generated by
# e2e/harness/kind/net-images.sh from sigs.k8s.io/kind@{kind_version} pkg/build/nodeimage/const_storage.go. Changes from kind's manifest:
#  - provisioner image {lpp} (rancher/local-path-provisioner {lpp_version}, built from the module, CGO off)
#    instead of docker.io/kindest/local-path-provisioner;
#  - helper image {helper} (the project's Debian bookworm base: sh, rm, mkdir) instead of
#    docker.io/kindest/local-path-helper, both in --helper-image and in helperPod.yaml;
#  - imagePullPolicy Never (provisioner and helper pod): the images are pre-loaded in every node's
#    containerd and no registry is reachable, so a pull could only fail (kind's node config disables
#    kubelet image GC, so pre-loaded images stay).
# Checked against {lpp_version} (kind's manifest was written for v0.0.34): the flags used (--debug, start,
# --helper-image, --config) and the env (POD_NAMESPACE, CONFIG_MOUNT_PATH) all exist in {lpp_version}.
# In {lpp_version} the helper pod's image comes from helperPod.yaml (ConfigMap key, re-read from
# $CONFIG_MOUNT_PATH); --helper-image is required to be non-empty but is not used otherwise. RBAC is the
# same as {lpp_version}'s deploy/local-path-storage.yaml.
"""
tmp = out + ".tmp"
with open(tmp, "w") as f:
    f.write(header + body.lstrip("\n"))
os.replace(tmp, out)
PY
}

validate_yaml() {
  local f
  for f in "$here/flannel.yaml" manifests/storage.yaml; do
    python3 -c 'import yaml,sys; list(yaml.safe_load_all(open(sys.argv[1])))' "$f" || die "$f: invalid YAML"
    log "$f: valid YAML"
  done
  # the manifest names the image by hand: a version bump in versions.env must not leave it behind
  grep -q "image: $FLANNEL_IMAGE\$" "$here/flannel.yaml" || die "$here/flannel.yaml does not run $FLANNEL_IMAGE"
}

# verify ARCHIVE NAME ENTRYPOINT_JSON CMD_JSON: the archive is an OCI image of that name and config
verify() { python3 "$OCI" check "$1" --name "$2" --entrypoint "$3" --cmd "$4"; }

build_flanneld
flannel_image
build_lpp
lpp_image
helper_image
storage_manifest
validate_yaml
verify images/flannel.tar "$FLANNEL_IMAGE" '["/opt/bin/flanneld"]' null
verify images/local-path-provisioner.tar "$LPP_IMAGE" '["/usr/local/bin/local-path-provisioner"]' null
verify images/local-path-helper.tar "$HELPER_IMAGE" null '["bash"]'
log "done"
echo "$out"
