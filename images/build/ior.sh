#!/usr/bin/env bash
# The one IOR build recipe (images/mpi/Dockerfile from source, and images/build/host.sh):
#   ior.sh ARCHIVE PREFIX MPI [DESTDIR]
# ARCHIVE is a verified git archive of the 4.0.0 tag (fetch-source.sh): ./bootstrap regenerates configure.
# MPI names the MPI to build against, either
#   - a prefix whose bin/mpicc compiles (an mpich.sh tree: /opt/mpich in the image), or
#   - an mpicc itself (Debian's Open MPI: /usr/bin/mpicc.openmpi).
# Its mpicc compiles IOR, whose MPIIO backend (on by default) goes through that MPI's MPI-IO: with the
# MPICH tree ROMIO's pvfs2 driver, so `-a MPIIO -o pvfs2:/...` reaches OrangeFS (Debian's Open MPI has
# no OrangeFS driver). Installs ior, mdtest and md-workbench.
# Needs: gcc make autoconf automake pkg-config, and libmpi's dependencies findable by the linker and the
# loader (configure runs test programs): ldconfig in an image, LD_LIBRARY_PATH on the host.
# Output: stdout of the build steps is dropped; compiler warnings and errors go to stderr.
set -euo pipefail
usage="usage: ior.sh ARCHIVE PREFIX MPI [DESTDIR]"
archive=${1:?$usage}
prefix=${2:?$usage}
mpi=${3:?$usage}
destdir=${4:-}
jobs=${PFSLAYOUT_BUILD_JOBS:-$(nproc)}
die() { echo "ior.sh: $*" >&2; exit 1; }
if [ -d "$mpi" ]; then mpicc=$mpi/bin/mpicc; else mpicc=$mpi; fi
if [ ! -f "$mpicc" ] || [ ! -x "$mpicc" ]; then
  die "$mpicc missing: MPI must be an MPI prefix with bin/mpicc (an mpich.sh tree) or an mpicc"
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar -xf "$archive" -C "$src" --strip-components=1
cd "$src"
./bootstrap >/dev/null 2>&1 || { ./bootstrap >&2; die "./bootstrap failed"; }
# --without-cuda --without-gpuDirect: their default "check" adds -Wl,-rpath=check/lib64 even where no CUDA
# exists, a RUNPATH relative to the working directory (a library-injection hole); no GPU here anyway.
./configure --prefix="$prefix" --disable-dependency-tracking --without-cuda --without-gpuDirect \
  CC="$mpicc" >/dev/null
grep -q '^#define USE_MPIIO_AIORI' src/config.h || die "configure left out the MPIIO backend"
make -j"$jobs" >/dev/null
make install DESTDIR="$destdir" >/dev/null
root=$destdir$prefix
for b in ior mdtest md-workbench; do
  [ -x "$root/bin/$b" ] || die "$root/bin/$b missing after make install"
done
rm -rf "$root"/lib/*.la "$root"/lib/*.a
readelf -d "$root/bin/ior" | grep 'NEEDED.*\[libmpi\.so' >/dev/null || die "ior does not link libmpi"
! readelf -d "$root"/bin/ior "$root"/bin/mdtest "$root"/bin/md-workbench | grep -E '\((RPATH|RUNPATH)\)' >/dev/null \
  || die "an IOR binary carries an rpath"
