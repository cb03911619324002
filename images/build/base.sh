#!/usr/bin/env bash
# The base image of every buildah build here (no image registry is reachable, Docker Hub included):
# Debian 12 (bookworm) `minbase` from the machine's own Debian mirror, as an OCI archive.
#   base.sh ARCHIVE NAME
# The mirror is whatever this machine's apt uses: its sources files that name bookworm are handed to
# mmdebstrap as they are (deb822 or one-line), so nothing here names a mirror host. PFSLAYOUT_APT_SOURCES
# names another sources file instead. The dpkg filters are those of Docker's debian:*-slim images; they
# stay in the image (/etc/dpkg/dpkg.cfg.d/99mmdebstrap), so packages installed later are slim too.
# The archive is one uncompressed layer (the mmdebstrap tar, less the device nodes it adds under /dev:
# container runtimes mount their own /dev, and unprivileged unpacking cannot create them) with io.containerd.image.name and
# org.opencontainers.image.ref.name annotations (oci.py); the config's CMD is bash, like debian:12-slim.
#   base.sh --sources   prints the sources files it would use (their content is part of the cache key)
#   base.sh --rootfs OUT [MMDEBSTRAP OPTION...]   the same root filesystem as a plain tar, with packages
#                       (--include=...) and hooks added: the kind node image and its images (e2e/harness/kind/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SUITE=bookworm
die() { echo "base.sh: $*" >&2; exit 2; }

# The host's sources files for the suite (the only input besides this script that the image depends on).
sources_files() {
  if [ -n "${PFSLAYOUT_APT_SOURCES:-}" ]; then
    [ -f "$PFSLAYOUT_APT_SOURCES" ] || die "PFSLAYOUT_APT_SOURCES=$PFSLAYOUT_APT_SOURCES is not a file"
    echo "$PFSLAYOUT_APT_SOURCES"
    return
  fi
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && grep -v '^[[:space:]]*#' "$f" | grep -qw "$SUITE" && echo "$f"
  done
  return 0
}
if [ "${1:-}" = --sources ]; then sources_files; exit 0; fi

# rootfs OUT [MMDEBSTRAP OPTION...]: the slim minbase root filesystem as one tar (the device nodes left
# out), extra packages and hooks given as mmdebstrap options (--include=..., --customize-hook=...)
rootfs() {
  local out=$1 sources
  shift
  mapfile -t sources < <(sources_files)
  [ ${#sources[@]} -gt 0 ] || die "no apt sources file of this machine names $SUITE: set PFSLAYOUT_APT_SOURCES to a sources file for Debian $SUITE"
  command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (e2e/harness/setup/host-packages.sh installs it)"
  mmdebstrap --quiet --variant=minbase --format=tar \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/linda/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$@" "$SUITE" - "${sources[@]}" | tar --delete --wildcards './dev/*' > "$out"
}
if [ "${1:-}" = --rootfs ]; then
  shift
  rootfs "${1:?usage: base.sh --rootfs OUT [MMDEBSTRAP OPTION...]}" "${@:2}"
  exit 0
fi

archive=${1:?usage: base.sh ARCHIVE NAME}
name=${2:?usage: base.sh ARCHIVE NAME}
tmp=$(mktemp -d "$(dirname "$archive")/.base.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rootfs "$tmp/rootfs.tar"
python3 "$here/oci.py" rootfs "$tmp/rootfs.tar" "$archive" --name "$name" --cmd '["bash"]' \
  --history "mmdebstrap --variant=minbase $SUITE (images/build/base.sh)"
