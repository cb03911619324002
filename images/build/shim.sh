#!/usr/bin/env bash
# Builds this repository's libpfsshim.so (and pfsprobe) from shim/ against one MPI, for
# images/mpi/Dockerfile (from source) and images/build/host.sh alike:
#   shim.sh [--libdir DIR] --jansson ARCHIVE SHIM_SRC PREFIX MPI ORANGEFS|- [DESTDIR]
# ARCHIVE is jansson's source (Debian's jansson_2.14.orig.tar.gz, fetch-source.sh): built into both files
# as a static library, so they need nothing at run time but libc, libmpi (and pfsprobe libpvfs2) — a
# user's image without libjansson runs the shim (checked below).
# MPI names the MPI whose ABI the shim is built for, either
#   - a prefix whose bin/mpicc compiles (an mpich.sh tree: /opt/mpich in the image), or
#   - an mpicc itself (Debian's Open MPI: /usr/bin/mpicc.openmpi). MPICH's MPI_Comm is an int, Open MPI's
#     a pointer: a shim only works in programs of the MPI it was built against.
# ORANGEFS is an OrangeFS tree: then PREFIX/bin/pfsprobe (with its libpvfs2 backend) is built too.
# `-` builds only the `pfsshim` target (the Open MPI flavour: pfsprobe stays MPICH's).
# libpfsshim.so goes to PREFIX/DIR (--libdir, default lib; the Open MPI flavour uses lib/openmpi).
# RelWithDebInfo (-O2 -g), the build type shim/build.sh tests: -O3 raises -Wmaybe-uninitialized findings
# that -Werror turns fatal. CMAKE_SKIP_RPATH: no rpath into the build machine's trees, so the files run
# at /opt/mpich + /opt/orangefs in an image (ldconfig) and from the host cache (LD_LIBRARY_PATH).
# Its own build directory (a temporary one): shim/build/ belongs to shim/build.sh.
# Needs: cmake gcc make, libmpi's and libpvfs2's dependencies findable.
set -euo pipefail
usage="usage: shim.sh [--libdir DIR] --jansson ARCHIVE SHIM_SRC PREFIX MPI ORANGEFS|- [DESTDIR]"
libdir=lib
jansson=
while :; do
  case ${1:-} in
    --libdir) libdir=${2:?$usage}; shift 2 ;;
    --jansson) jansson=${2:?$usage}; shift 2 ;;
    *) break ;;
  esac
done
src=${1:?$usage}
prefix=${2:?$usage}
mpi=${3:?$usage}
orangefs=${4:?$usage}
destdir=${5:-}
jobs=${PFSLAYOUT_BUILD_JOBS:-$(nproc)}
die() { echo "shim.sh: $*" >&2; exit 1; }
[ -f "$src/CMakeLists.txt" ] || die "$src/CMakeLists.txt missing: SHIM_SRC must be the repository's shim/"
case $libdir in /*|*..*) die "--libdir $libdir: give a directory relative to PREFIX" ;; esac
[ -n "$jansson" ] || die "--jansson ARCHIVE missing: give jansson's source archive (images/build/fetch-source.sh jansson)"
[ -f "$jansson" ] || die "--jansson $jansson: no such file (images/build/fetch-source.sh jansson)"
# The mpicc and, where there is one beside it, its mpiexec (mpicc.openmpi -> mpiexec.openmpi); CMake
# needs the launcher only for the tests, which are off here.
if [ -d "$mpi" ]; then mpicc=$mpi/bin/mpicc; mpiexec=$mpi/bin/mpiexec
else mpicc=$mpi; mpiexec=$(dirname "$mpi")/$(basename "$mpi" | sed 's/^mpicc/mpiexec/'); fi
if [ ! -f "$mpicc" ] || [ ! -x "$mpicc" ]; then
  die "$mpicc missing: MPI must be an MPI prefix with bin/mpicc (an mpich.sh tree) or an mpicc"
fi
mpi_args=(-DMPI_C_COMPILER="$mpicc")
[ -x "$mpiexec" ] && mpi_args+=(-DMPIEXEC_EXECUTABLE="$mpiexec")
targets=(pfsshim)
probe_args=()
if [ "$orangefs" != - ]; then targets+=(pfsprobe); probe_args=(-DORANGEFS_PREFIX="$orangefs"); fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
mkdir "$build/jansson-src"
tar -xf "$jansson" -C "$build/jansson-src" --strip-components=1
cmake -S "$src" -B "$build/cmake" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_SKIP_RPATH=ON "${mpi_args[@]}" \
  "${probe_args[@]}" -DPFSLAYOUT_BUILD_TESTS=OFF -DPFSLAYOUT_JANSSON_SOURCE="$build/jansson-src" >/dev/null
cmake --build "$build/cmake" -j "$jobs" --target "${targets[@]}" >/dev/null
root=$destdir$prefix
install -D -m 0755 "$build/cmake/src/libpfsshim.so" "$root/$libdir/libpfsshim.so"
readelf -d "$root/$libdir/libpfsshim.so" | grep 'NEEDED.*\[libmpi\.so' >/dev/null \
  || die "libpfsshim.so does not link libmpi"
# only libc and libmpi: what a user's MPI image has anyway
extra=$(readelf -d "$root/$libdir/libpfsshim.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' \
          | grep -Ev '^(libc\.so\.6|libmpi\.so\.[0-9]+)$' || true)
[ -z "$extra" ] || die "libpfsshim.so needs more than libc and libmpi: $(echo "$extra" | tr '\n' ' ')"
! readelf -d "$root/$libdir/libpfsshim.so" | grep -E '\((RPATH|RUNPATH)\)' >/dev/null \
  || die "libpfsshim.so carries an rpath"
[ "$orangefs" != - ] || exit 0
install -D -m 0755 "$build/cmake/probe/pfsprobe" "$root/bin/pfsprobe"
readelf -d "$root/bin/pfsprobe" | grep 'NEEDED.*\[libpvfs2\.so' >/dev/null \
  || die "pfsprobe does not link libpvfs2: its pvfs2 backend is missing"
! readelf -d "$root/bin/pfsprobe" | grep -E '\((RPATH|RUNPATH)\)' >/dev/null \
  || die "pfsprobe carries an rpath"
! readelf -d "$root/bin/pfsprobe" | grep 'NEEDED.*\[libjansson' >/dev/null \
  || die "pfsprobe links libjansson dynamically"
