#!/usr/bin/env bash
# Build libpfsshim (and pfsprobe, the C unit tests) twice: against Open MPI and against MPICH.
#   shim/build.sh          configure + build shim/build/openmpi and shim/build/mpich (RelWithDebInfo)
#   shim/build.sh --test   ... run ctest in both, then build and test Release (-O3) twins in
#                          shim/build/openmpi-release and shim/build/mpich-release
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) run_tests=1 ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument '$arg'; use --test or nothing" >&2; exit 2 ;;
  esac
done
jobs="${PFSLAYOUT_BUILD_JOBS:-2}"
extra=()
if [[ -n "${ORANGEFS_PREFIX:-}" ]]; then extra+=("-DORANGEFS_PREFIX=${ORANGEFS_PREFIX}"); fi

built=0
for flavour in openmpi mpich; do
  cc="mpicc.${flavour}"
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build.sh: $cc not found; skipping the $flavour build (install the ${flavour} dev package)" >&2
    continue
  fi
  # The RelWithDebInfo tree is what the MPI tests and the images use. With --test a Release tree is
  # built and tested too: -O3 inlines and warns differently, and -Werror must hold there as well.
  types=(RelWithDebInfo)
  if [[ $run_tests == 1 ]]; then types+=(Release); fi
  for type in "${types[@]}"; do
    dir="$here/build/$flavour"
    if [[ $type == Release ]]; then dir="$here/build/$flavour-release"; fi
    cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG" \
      -DMPI_C_COMPILER="$(command -v "$cc")" -DMPIEXEC_EXECUTABLE="$(command -v "mpirun.${flavour}")" \
      "${extra[@]}" >/dev/null
    cmake --build "$dir" -j "$jobs"
    if [[ $run_tests == 1 ]]; then
      ctest --test-dir "$dir" --output-on-failure -j "$jobs"
    fi
  done
  built=$((built + 1))
done
if [[ $built == 0 ]]; then
  echo "build.sh: neither mpicc.openmpi nor mpicc.mpich is installed" >&2
  exit 1
fi
