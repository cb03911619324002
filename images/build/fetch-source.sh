#!/usr/bin/env bash
# Prints the path of a verified source archive for one pinned source (images/sources.env):
#   fetch-source.sh orangefs|ior|mpich|jansson
# Where it comes from (the offline-mirror pattern, docs/images.md "Sources"):
#   - PFSLAYOUT_SOURCE_MIRROR set: that directory must hold the archive under its pinned file name
#     (OrangeFS, IOR; MPICH and jansson are taken from there when present, else as below);
#   - otherwise: the upstream archive (OrangeFS, IOR) or Debian's source package (MPICH, jansson, through
#     the machine's own apt mirror), downloaded once into ~/.cache/pfs-layout-operator/sources/.
# Either way the archive's content hash must match the pin; anything else fails with one line naming
# the file, the expected hash and the setting to fix. A verified archive is stamped in the cache (never
# in the mirror, which may be shared or read-only), so a warm run does not hash it again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../sources.env
. "$here/../sources.env"
CACHE_ROOT=${PFSLAYOUT_CACHE:-$HOME/.cache/pfs-layout-operator}
MIRROR=${PFSLAYOUT_SOURCE_MIRROR:-}

die() { printf 'fetch-source: %s\n' "$*" >&2; exit 2; }

name=${1:-}
case $name in
  orangefs) archive=$ORANGEFS_ARCHIVE want=$ORANGEFS_CONTENT_SHA256 url=$ORANGEFS_URL ;;
  ior) archive=$IOR_ARCHIVE want=$IOR_CONTENT_SHA256 url=$IOR_URL ;;
  mpich) archive=$MPICH_ARCHIVE want=$MPICH_CONTENT_SHA256 debian=$MPICH_DEBIAN_SOURCE url="apt-get source $debian" ;;
  jansson) archive=$JANSSON_ARCHIVE want=$JANSSON_CONTENT_SHA256 debian=$JANSSON_DEBIAN_SOURCE
           url="apt-get source $debian" ;;
  *) die "usage: fetch-source.sh orangefs|ior|mpich|jansson" ;;
esac

# The tree's hash, whatever compressed it: extract without the top directory, hash every file in
# byte order of its path, hash that list.
content_hash() {
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064  # expand now: the trap must remove this very directory
  trap "rm -rf '$tmp'" RETURN
  tar -xf "$1" -C "$tmp" --strip-components=1 2>/dev/null || { echo unreadable; return 0; }
  (cd "$tmp" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

verify() { # file fix-hint
  local file=$1 got stamp
  mkdir -p "$CACHE_ROOT/sources/verified"
  stamp=$CACHE_ROOT/sources/verified/$(readlink -f "$file" | sha256sum | cut -c1-16)-$want
  [ -f "$stamp" ] && [ "$stamp" -nt "$file" ] && return 0
  got=$(content_hash "$file")
  [ "$got" = "$want" ] || die "$file has content hash $got, expected $want ($name, images/sources.env): $2"
  touch "$stamp"
}

apt_source() { # downloads Debian's orig tarball into $1 through a private apt configuration
  local dir=$1 apt=$CACHE_ROOT/apt-src f
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/sources.list.d"
  # deb-src twins of the machine's own deb entries (one-line and deb822 formats), so the download uses
  # whatever mirror this machine is set up with; the host's apt configuration is not touched.
  rm -f "$apt/sources.list.d/"*
  [ -f /etc/apt/sources.list ] && sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > "$apt/sources.list.d/host.list"
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    case $f in
      *.list) sed -n 's/^deb /deb-src /p' "$f" > "$apt/sources.list.d/$(basename "$f")" ;;
      *.sources) sed 's/^Types:.*/Types: deb-src/' "$f" > "$apt/sources.list.d/$(basename "$f")" ;;
    esac
  done
  local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
              -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" -qq update >&2 || die "apt-get update of the deb-src entries failed: check the machine's apt sources, or set PFSLAYOUT_SOURCE_MIRROR to a directory holding $archive"
  (cd "$dir" && apt-get "${opts[@]}" -qq source --download-only "$debian" >&2) \
    || die "apt-get source $debian failed: set PFSLAYOUT_SOURCE_MIRROR to a directory holding $archive"
}

# MPICH and jansson come from a package registry every machine reaches (Debian's source archive), so a
# mirror need not carry them: each is used from the mirror when there, and fetched through apt otherwise.
if [ -n "$MIRROR" ] && { [ -z "${debian:-}" ] || [ -f "$MIRROR/$archive" ]; }; then
  file=$MIRROR/$archive
  [ -f "$file" ] || die "$file is missing (content hash $want): put $archive there, or unset PFSLAYOUT_SOURCE_MIRROR to download it from $url"
  verify "$file" "replace it in PFSLAYOUT_SOURCE_MIRROR=$MIRROR with the pinned archive, or unset the setting to download it"
  readlink -f "$file"
  exit 0
fi

dir=$CACHE_ROOT/sources
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock -w 1800 9 || die "timed out waiting for $dir/.lock"
file=$dir/$archive
if [ ! -f "$file" ]; then
  if [ -n "${debian:-}" ]; then
    apt_source "$dir"
  else
    curl -fsSL --retry 3 -o "$file.part" "$url" \
      || die "downloading $url failed: set PFSLAYOUT_SOURCE_MIRROR to a directory holding $archive (content hash $want)"
    mv "$file.part" "$file"
  fi
  [ -f "$file" ] || die "$file did not arrive: set PFSLAYOUT_SOURCE_MIRROR to a directory holding it"
fi
verify "$file" "delete it to download it again, or set PFSLAYOUT_SOURCE_MIRROR to a directory holding the pinned archive"
echo "$file"
