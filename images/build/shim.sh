#!/usr/bin/env bash
# Builds this repository's libpfsshim.so and pfsprobe (shim/) against an MPICH and an OrangeFS tree,
# for images/mpi/Dockerfile (from source) and images/build/host.sh alike:
#   shim.sh SHIM_SRC PREFIX MPICH ORANGEFS [DESTDIR]
# Installs PREFIX/lib/libpfsshim.so and PREFIX/bin/pfsprobe (PREFIX is /usr/local in the image).
# RelWithDebInfo (-O2 -g), the build type shim/build.sh tests: -O3 raises -Wmaybe-uninitialized findings
# that -Werror turns fatal. CMAKE_SKIP_RPATH: no rpath into the build machine's trees, so the files run
# at /opt/mpich + /opt/orangefs in an image (ldconfig) and from the host cache (LD_LIBRARY_PATH).
# Its own build directory (a temporary one): shim/build/ belongs to shim/build.sh.
# Needs: cmake gcc make pkg-config libjansson-dev, libmpi's and libpvfs2's dependencies findable.
set -euo pipefail
usage="usage: shim.sh SHIM_SRC PREFIX MPICH ORANGEFS [DESTDIR]"
src=${1:?$usage}
prefix=${2:?$usage}
mpich=${3:?$usage}
orangefs=${4:?$usage}
destdir=${5:-}
jobs=${PFSLAYOUT_BUILD_JOBS:-$(nproc)}
die() { echo "shim.sh: $*" >&2; exit 1; }
[ -f "$src/CMakeLists.txt" ] || die "$src/CMakeLists.txt missing: SHIM_SRC must be the repository's shim/"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_SKIP_RPATH=ON \
  -DMPI_C_COMPILER="$mpich/bin/mpicc" -DMPIEXEC_EXECUTABLE="$mpich/bin/mpiexec" \
  -DORANGEFS_PREFIX="$orangefs" -DPFSLAYOUT_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target pfsshim pfsprobe >/dev/null
root=$destdir$prefix
install -D -m 0755 "$build/src/libpfsshim.so" "$root/lib/libpfsshim.so"
install -D -m 0755 "$build/probe/pfsprobe" "$root/bin/pfsprobe"
readelf -d "$root/bin/pfsprobe" | grep -q 'NEEDED.*\[libpvfs2\.so' \
  || die "pfsprobe does not link libpvfs2: its pvfs2 backend is missing"
! readelf -d "$root/bin/pfsprobe" "$root/lib/libpfsshim.so" | grep -Eq '\((RPATH|RUNPATH)\)' \
  || die "pfsprobe or libpfsshim.so carries an rpath"
