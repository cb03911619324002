#!/usr/bin/env bash
# Installs the Debian packages the build and the test tiers need, only when something is missing, so a
# warm machine pays nothing. Needs root (or passwordless sudo) on a fresh machine.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  openmpi-bin libopenmpi-dev        # Open MPI: the default mpicc/mpirun
  mpich libmpich-dev                # MPICH: the MPI of the images (mpicc.mpich, mpirun.mpich)
  libjansson-dev                    # JSON for the C shim and probe
  clang libclang-rt-14-dev          # libFuzzer and sanitizers for the config parser's fuzz test (shim/tests/fuzz)
  openssl                           # PKI of the local control plane
  python3-venv
  procps psmisc curl ca-certificates jq
  # The real node of the test cluster (docs/test-cluster.md): containerd + runc run the pods, the CNI
  # plugins wire them to the node bridge, iptables/conntrack serve kube-proxy, socat forwards the
  # API server from loopback to the bridge.
  containerd runc containernetworking-plugins iptables conntrack iproute2 socat util-linux
  # Host builds of OrangeFS, MPICH (ROMIO pvfs2), IOR and the shim (images/build/host.sh): autotools for
  # the git trees, OrangeFS's Berkeley DB / OpenSSL / xattr headers, Debian's hwloc for MPICH.
  autoconf automake libtool bison flex perl patch libdb-dev libattr1-dev libssl-dev libhwloc-dev
  # The images (images/build.sh): the base from the Debian mirror, buildah to build on it.
  mmdebstrap buildah
  # Pushing them to a registry (images/build.sh --push; the test cluster's: e2e/harness/cluster/registry.sh).
  skopeo
  # kind's container engine where no Docker daemon answers (docs/kind.md): podman, and netavark with
  # aardvark-dns, whose network DNS lets kind's nodes find the control plane by name. A fresh Debian
  # machine has none of them (seen 2026-11-30: `podman: command not found`, so test-all's kind session
  # could not start).
  podman netavark aardvark-dns
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "host-packages: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo -n)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
