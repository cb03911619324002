#!/usr/bin/env bash
# The one MPICH build recipe, used by images/mpi/Dockerfile (from source) and by the host build
# (images/build/host.sh) alike:  mpich.sh ARCHIVE PREFIX ORANGEFS [DESTDIR]
# ARCHIVE is Debian's copy of the upstream release tarball (mpich_4.0.2.orig.tar.xz, fetch-source.sh);
# ORANGEFS is an OrangeFS tree built by orangefs.sh (its bin/pvfs2-config locates itself).
#   --with-device=ch3:nemesis      TCP between pods, shared memory inside one; no fabric library to pick
#   --with-file-system=ufs+pvfs2   ROMIO's pvfs2 driver (the point of this build: Debian's mpich lacks it).
#                                  ROMIO finds OrangeFS through pvfs2-config on PATH, exactly what
#                                  --with-pvfs2=DIR does (it only looks for DIR/bin/pvfs2-config), so the
#                                  host's cache path stays out of MPICH's recorded configure arguments.
#   --disable-fortran --disable-cxx  C only (IOR, the shim, pfsprobe)
#   CFLAGS="-O2 -fcommon"          ROMIO's ad_pvfs2_common.h defines a variable (ADIOI_PVFS2_fs_s), which
#                                  GCC >= 10 refuses to link into libmpi more than once without -fcommon
# Speed-ups, none of which changes what the library does:
#   --disable-static               libtool compiles every file once (PIC) instead of twice
#   --with-hwloc (Debian's libhwloc-dev) instead of the embedded copy; ch3 uses the dataloop datatype
#                                  engine by default, so the large generated yaksa sources are not built
#   --no-recursion                 skips configuring the test suite (test/mpi), which `make` never builds
#   --disable-dependency-tracking  one-shot build
#   --with-wrapper-dl-type=none    mpicc adds no rpath: the tree runs at /opt/mpich in an image (ldconfig)
#                                  and from the host cache (LD_LIBRARY_PATH) alike
# Relocation: mpicc and mpich.pc derive their prefix from their own location (see the end).
# Before configure, every MPICH_PATCHES/*.patch in name order (patch -p1; default: mpich-patches/ beside this
# script): fixes to upstream the project's tests found, each explained in its own header.
# Needs: gcc make perl patch libhwloc-dev libssl-dev (pvfs2-config --libs names -lssl -lcrypto) libdb5.3, and
# the OrangeFS lib directory findable by the linker for libpvfs2's own dependencies.
# Output: stdout of the build steps is dropped; compiler warnings and errors go to stderr.
set -euo pipefail
usage="usage: mpich.sh ARCHIVE PREFIX ORANGEFS [DESTDIR]"
archive=${1:?$usage}
prefix=${2:?$usage}
orangefs=${3:?$usage}
destdir=${4:-}
jobs=${PFSLAYOUT_BUILD_JOBS:-$(nproc)}
patches=${MPICH_PATCHES:-$(dirname "$(readlink -f "$0")")/mpich-patches}
die() { echo "mpich.sh: $*" >&2; exit 1; }
[ -x "$orangefs/bin/pvfs2-config" ] || die "$orangefs/bin/pvfs2-config missing: ORANGEFS must be an orangefs.sh tree"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar -xf "$archive" -C "$src" --strip-components=1
cd "$src"
for p in "$patches"/*.patch; do
  [ -e "$p" ] || continue
  patch -p1 --forward --batch --silent < "$p" || die "$p does not apply to $(basename "$archive")"
done
step() { echo "mpich.sh: $1 took $(( $(date +%s) - t0 )) s" >&2; t0=$(date +%s); }
t0=$(date +%s)
PATH="$orangefs/bin:$PATH" ./configure --prefix="$prefix" \
  --with-device=ch3:nemesis --with-pm=hydra --disable-fortran --disable-cxx \
  --enable-romio --with-file-system=ufs+pvfs2 --with-hwloc \
  --disable-static --disable-dependency-tracking --no-recursion --with-wrapper-dl-type=none \
  CFLAGS="-O2 -fcommon" >/dev/null
step configure
make -j"$jobs" >/dev/null
step make
make install DESTDIR="$destdir" >/dev/null
step "make install"
root=$destdir$prefix
lib=$root/lib/libmpi.so
# No `grep -q` after a pipe (pipefail): its early exit can SIGPIPE the writer and fail a true check.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed "$lib" | grep '^libpvfs2\.so' >/dev/null || die "$lib does not link libpvfs2: ROMIO's pvfs2 driver is missing"
needed "$lib" | grep '^libhwloc\.so' >/dev/null || die "$lib does not link Debian's libhwloc: install libhwloc-dev"
! readelf -d "$lib" | grep -E '\((RPATH|RUNPATH)\)' >/dev/null || die "$lib carries an rpath; the tree would not relocate"
rm -rf "$root"/lib/*.la "$root"/share/doc
# The link flags a static link would add (mpicc's final_libs for -static-mpi, mpich.pc's Libs) name the
# OrangeFS tree this was built against; name its canonical prefix instead, so no build machine's path
# is left in the tree. (libmpi.so links libpvfs2 itself; dynamic links through mpicc never use these.)
ofs_abs=$(cd "$orangefs" && pwd)
if [ "$ofs_abs" != /opt/orangefs ]; then
  { grep -rlIF "$ofs_abs" "$root" || true; } | while read -r f; do sed -i "s|$ofs_abs|/opt/orangefs|g" "$f"; done
  ! grep -rqF "$ofs_abs" "$root" || die "$root still names $ofs_abs"
fi
# The relocation, small and explicit: the wrapper scripts and the pkg-config file compute their prefix
# from where they are (through symlinks), instead of the configured one. Everything else in the tree
# is prefix-free at run time (hydra's mpiexec finds hydra_pmi_proxy beside itself).
for w in "$root"/bin/mpicc "$root"/bin/mpicxx "$root"/bin/mpif77 "$root"/bin/mpifort; do
  [ -f "$w" ] && [ ! -L "$w" ] || continue
  sed -i -e "s|^prefix=$prefix\$|prefix=\$(cd \"\$(dirname \"\$(readlink -f \"\$0\")\")/..\" \\&\\& pwd)|" \
    -e "s#^\(exec_prefix\|sysconfdir\|includedir\|libdir\)=$prefix\(/.*\)\?\$#\1=\${prefix}\2#" "$w"
  ! grep -q "=$prefix" "$w" || die "$w still names $prefix after the relocation"
done
pc=$root/lib/pkgconfig/mpich.pc
[ -f "$pc" ] && sed -i "s|^prefix=$prefix\$|prefix=\${pcfiledir}/../..|" "$pc"
[ "$("$root/bin/mpicc" -show -c x.c | tr ' ' '\n' | grep '^-I' | head -1)" = "-I$(cd "$root" && pwd)/include" ] \
  || die "the relocated mpicc does not point at $root/include"
