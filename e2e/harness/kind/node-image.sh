#!/usr/bin/env bash
# The kind node image, built here where no registry serves kindest/node (docs/kind.md says it step by step):
#   1. cp-images.sh: kubeadm and every image kubeadm needs (apiserver, controller-manager, scheduler, proxy,
#      etcd, CoreDNS, pause) from the binaries e2e/harness/cluster/build.sh built from the Go module proxy;
#   2. net-images.sh: flannel (the CNI) and local-path-provisioner (the storage), built from source;
#   3. the project's Debian bookworm root filesystem (images/build/base.sh --rootfs) with systemd, Debian's
#      containerd, runc and CNI plugins, and kind's own base-image files (its entrypoint, systemd units,
#      containerd configuration) from the kind module at KIND_VERSION — what kind's images/base/Dockerfile
#      installs, from Debian packages instead of source trees on GitHub;
#   4. kubelet, kubectl and kubeadm in /usr/bin, /kind/version, the CNI and storage manifests kind applies
#      at `create` (/kind/manifests/default-{cni,storage}.yaml), and the image archives in /kind/images with
#      a systemd unit that imports them into containerd before the kubelet starts (kind's own builder
#      imports them at build time through a running containerd; /var is a volume of each node either way).
# The archive is cached by a key over every input: ~/.cache/pfs-layout-operator/kind-node-<k8s>-<key>.tar.
# Usage: node-image.sh   prints "<archive> <image name>"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cluster/lib.sh"

log() { printf 'kind node-image: %s\n' "$*" >&2; }
die() { printf 'kind node-image: error: %s\n' "$*" >&2; exit 1; }

# Packages of kind's base image that the node needs (images/base/Dockerfile), plus Debian's builds of what
# kind compiles itself: containerd (1.6: the kubelet of versions.env supports it), runc and the CNI plugins.
PACKAGES=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz
PACKAGES+=,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat

[ -x "$K8S_DIR/bin/kubelet" ] || die "$K8S_DIR/bin/kubelet is missing: run e2e/harness/cluster.sh build first"
cp_out=$("$here/cp-images.sh")
net_out=$("$here/net-images.sh")
kind_src=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
files=$kind_src/images/base/files
[ -f "$files/usr/local/bin/entrypoint" ] || die "kind $KIND_VERSION's base-image files are not in $kind_src"
mapfile -t sources < <("$REPO_ROOT/images/build/base.sh" --sources)
[ ${#sources[@]} -gt 0 ] || die "no apt sources file of this machine names bookworm"
archives=("$cp_out"/images/*.tar "$net_out"/images/*.tar)

key=$( { echo "$K8S_VERSION $KIND_VERSION $PACKAGES $(mmdebstrap --version)"
         cat "$0" "$REPO_ROOT/images/build/base.sh" "${sources[@]}" "$here/flannel.yaml" "$net_out/manifests/storage.yaml"
         (cd "$files" && find . -type f | sort | xargs sha256sum)
         sha256sum "$K8S_DIR/bin/kubelet" "$K8S_DIR/bin/kubectl" "$cp_out/bin/kubeadm" "${archives[@]}"; } \
       | sha256sum | cut -c1-12)
archive=$CACHE_ROOT/kind-node-$K8S_VERSION-$key.tar
name=localhost/pfslayout/kind-node:$K8S_VERSION-$key
if [ -f "$archive" ]; then echo "$archive $name"; exit 0; fi

log "building $name (a Debian root filesystem and ${#archives[@]} image archives, ~2 min)"
stage=$(mktemp -d "$CACHE_ROOT/.kind-node.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root/usr/bin" "$root/kind/images" "$root/kind/bin" "$root/kind/manifests" \
  "$root/etc/systemd/system/multi-user.target.wants"
install -m 0755 "$K8S_DIR/bin/kubelet" "$K8S_DIR/bin/kubectl" "$cp_out/bin/kubeadm" "$root/usr/bin/"
printf '%s' "$K8S_VERSION" > "$root/kind/version"
cp "${archives[@]}" "$root/kind/images/"
# kind templates the CNI manifest it finds carrying this phrase: the pod subnet of the kind config.
{ echo "# would you kindly template this file"
  sed 's#"Network": "10.244.0.0/16"#"Network": "{{ .PodSubnet }}"#' "$here/flannel.yaml"; } > "$root/kind/manifests/default-cni.yaml"
grep -q '{{ .PodSubnet }}' "$root/kind/manifests/default-cni.yaml" || die "flannel.yaml's Network is not 10.244.0.0/16"
cp "$net_out/manifests/storage.yaml" "$root/kind/manifests/default-storage.yaml"
cat > "$root/kind/bin/preload-images.sh" <<'EOF'
#!/bin/sh
# Imports the image archives the node image carries into containerd's CRI namespace (nothing is pulled: no
# registry serves them). Importing an image already present only re-checks its content.
set -eu
for a in /kind/images/*.tar; do
  [ -f "$a" ] || continue
  ctr --namespace k8s.io images import --all-platforms "$a" >/dev/null
done
EOF
chmod 0755 "$root/kind/bin/preload-images.sh"
cat > "$root/etc/systemd/system/kind-preload-images.service" <<'EOF'
[Unit]
Description=Import the node image's container images into containerd
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/kind/bin/preload-images.sh

[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/kind-preload-images.service \
  "$root/etc/systemd/system/multi-user.target.wants/kind-preload-images.service"

# shellcheck disable=SC2016  # "$1" in the hooks is mmdebstrap's root directory, expanded by mmdebstrap
hooks=(
  "mkdir -p \"\$1/kind/bin\" \"\$1/etc/containerd\" \"\$1/etc/default\" \"\$1/etc/sysctl.d\" \"\$1/etc/systemd/system/kubelet.service.d\" \"\$1/etc/kubernetes/manifests\" \"\$1/opt/cni\""
  "install -m 0755 $files/usr/local/bin/* \"\$1/usr/local/bin/\""
  "install -m 0644 $files/kind/README.txt \"\$1/kind/\""
  "install -m 0755 $files/kind/bin/* \"\$1/kind/bin/\""
  "install -m 0644 $files/etc/crictl.yaml \"\$1/etc/\""
  "install -m 0644 $files/etc/containerd/config.toml \"\$1/etc/containerd/\""
  "install -m 0644 $files/etc/default/kubelet \"\$1/etc/default/\""
  "install -m 0644 $files/etc/sysctl.d/* \"\$1/etc/sysctl.d/\""
  "install -m 0644 $files/etc/systemd/system/*.service $files/etc/systemd/system/*.slice \"\$1/etc/systemd/system/\""
  "install -m 0644 $files/etc/systemd/system/kubelet.service.d/* \"\$1/etc/systemd/system/kubelet.service.d/\""
  # kind's units and configuration expect its own builds' paths; Debian installs the same programs elsewhere
  'ln -sf /usr/bin/containerd "$1/usr/local/bin/containerd"; ln -sfn /usr/lib/cni "$1/opt/cni/bin"; ln -sf /usr/lib/systemd/systemd "$1/sbin/init"'
  # the runtime spec template of kind's base image (its Dockerfile: `ctr oci spec` with kind's hook, no rlimits)
  'chroot "$1" sh -c "ctr oci spec | jq \".hooks.createContainer[.hooks.createContainer| length] |= . + {\\\"path\\\": \\\"/kind/bin/mount-product-files.sh\\\"}\" | jq \"del(.process.rlimits)\" > /etc/containerd/cri-base.json"'
  # the sandbox image is the pause kubeadm asks for (cp-images.sh built it under that name)
  "sed -i 's#sandbox_image = .*#sandbox_image = \"$(grep /pause: "$cp_out/images-list.txt")\"#' \"\$1/etc/containerd/config.toml\""
  # Processes here lack CAP_SYS_RESOURCE (this machine's containers and the host's shell alike), so runc
  # cannot lower a pod's oom_score_adj below the node's (the kubelet asks -998 for static pods: "failed to
  # update /proc/self/oom_score_adj: Permission denied"). containerd then clamps it, as kind's rootless mode does.
  'sed -i "s/restrict_oom_score_adj = false/restrict_oom_score_adj = true/" "$1/etc/containerd/config.toml"'
  # kind's base Dockerfile: no units but those a node needs, and the three it enables
  'find "$1/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete; rm -f "$1"/lib/systemd/system/multi-user.target.wants/* "$1"/etc/systemd/system/*.wants/* "$1"/lib/systemd/system/local-fs.target.wants/* "$1"/lib/systemd/system/sockets.target.wants/*udev* "$1"/lib/systemd/system/sockets.target.wants/*initctl* "$1"/lib/systemd/system/basic.target.wants/*; echo ReadKMsg=no >> "$1/etc/systemd/journald.conf"'
  'chroot "$1" systemctl enable kubelet.service containerd.service undo-mount-hacks.service; chroot "$1" systemctl mask systemd-binfmt.service'
  "cp -a $root/. \"\$1/\""
)
hook_args=()
for h in "${hooks[@]}"; do hook_args+=(--customize-hook="$h"); done
nice -n 10 "$REPO_ROOT/images/build/base.sh" --rootfs "$stage/rootfs.tar" --include="$PACKAGES" "${hook_args[@]}" \
  2>"$stage/mmdebstrap.log" || { tail -20 "$stage/mmdebstrap.log" >&2; die "base.sh --rootfs failed (above)"; }
# kind's node contract (images/base/Dockerfile): systemd as PID 1 behind kind's entrypoint, stopped by SIGRTMIN+3
python3 "$REPO_ROOT/images/build/oci.py" rootfs "$stage/rootfs.tar" "$stage/node.tar" --name "$name" \
  --entrypoint '["/usr/local/bin/entrypoint","/sbin/init"]' \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env container=docker \
  --stop-signal SIGRTMIN+3 --history "e2e/harness/kind/node-image.sh (kind $KIND_VERSION, Kubernetes $K8S_VERSION)"
mv "$stage/node.tar" "$archive"
log "built $archive"
# One node image kept per Kubernetes version: the archives of earlier keys (≈ 1.4 GiB each) go. A checkout
# at another key builds its own again (~2 min); left alone they filled 11 GiB here in a day.
for old in "$CACHE_ROOT/kind-node-$K8S_VERSION"-*.tar; do
  [ "$old" = "$archive" ] || [ ! -f "$old" ] || { rm -f "$old"; log "removed the earlier node image $old"; }
done
echo "$archive $name"
