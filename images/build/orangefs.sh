#!/usr/bin/env bash
# The one OrangeFS build recipe, used by images/orangefs/Dockerfile (from source) and by the host build
# (images/build/host.sh) alike:  orangefs.sh ARCHIVE PREFIX [DESTDIR]
# ARCHIVE is a verified git archive of the pinned tag (fetch-source.sh); the tree has no configure, so
# ./prepare regenerates it with Debian's autotools.
#   --enable-shared         libpvfs2.so for ROMIO in a shared libmpi and for LD_PRELOAD (default: .a only)
#   --with-db-backend=bdb   Berkeley DB: the LMDB backend drops the num_dfiles directory hint (it copies
#                           the caller's whole buffer out of the map, so "1" arrives followed by garbage
#                           and every file silently gets the default datafile count)
#   --disable-usrint        no POSIX interposition libraries: clients use libpvfs2, ROMIO or the tools
#   CFLAGS=-O2              also drops configure's -g; 2.10.0 needs no -fcommon
# Before that, every ORANGEFS_PATCHES/*.patch in name order (patch -p1; default: orangefs-patches/ beside
# this script): fixes to upstream the project's tests found, each explained in its own header.
# Needs: gcc make autoconf automake libtool bison flex perl patch libdb-dev libattr1-dev libssl-dev.
# Output: stdout of the build steps is dropped; compiler warnings and errors go to stderr.
set -euo pipefail
archive=${1:?usage: orangefs.sh ARCHIVE PREFIX [DESTDIR]}
prefix=${2:?usage: orangefs.sh ARCHIVE PREFIX [DESTDIR]}
destdir=${3:-}
jobs=${PFSLAYOUT_BUILD_JOBS:-$(nproc)}
patches=${ORANGEFS_PATCHES:-$(dirname "$(readlink -f "$0")")/orangefs-patches}
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar -xf "$archive" -C "$src" --strip-components=1
cd "$src"
for p in "$patches"/*.patch; do
  [ -e "$p" ] || continue
  patch -p1 --forward --batch --silent < "$p" \
    || { echo "orangefs.sh: $p does not apply to $(basename "$archive")" >&2; exit 1; }
done
./prepare >/dev/null
# A VPATH build fails upstream: build in the source tree.
./configure --prefix="$prefix" --enable-shared --with-db-backend=bdb --disable-usrint \
  CFLAGS="-O2" >/dev/null
make -j"$jobs" >/dev/null
make install DESTDIR="$destdir" >/dev/null
root=$destdir$prefix
test -x "$root/sbin/pvfs2-server" && test -e "$root/lib/libpvfs2.so" \
  || { echo "orangefs.sh: $root lacks sbin/pvfs2-server or lib/libpvfs2.so after make install" >&2; exit 1; }
# The one relocation: pvfs2-config (ROMIO's configure and the shim's CMake ask it for -I/-L) derives its
# prefix from its own location instead of the configured one, so the same tree answers correctly at
# /opt/orangefs in an image and wherever the host build cache keeps it. Nothing else reads the prefix at
# run time (the binaries carry no rpath; images register lib/ with ldconfig, the host uses LD_LIBRARY_PATH).
sed -i "s|^prefix=$prefix\$|prefix=\$(cd \"\$(dirname \"\$(readlink -f \"\$0\")\")/..\" \&\& pwd)|" "$root/bin/pvfs2-config"
# shellcheck disable=SC2016  # the literal text `$(cd ` that the sed above wrote
grep -q '^prefix=\$(cd ' "$root/bin/pvfs2-config" \
  || { echo "orangefs.sh: $root/bin/pvfs2-config has no 'prefix=$prefix' line to make relocatable" >&2; exit 1; }
[ "$("$root/bin/pvfs2-config" --cflags | tr -d ' ')" = "-I$(cd "$root" && pwd)/include" ] \
  || { echo "orangefs.sh: the relocated pvfs2-config prints a wrong --cflags" >&2; exit 1; }
