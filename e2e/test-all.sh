#!/usr/bin/env bash
# The one test command: sets up a fresh Debian machine (packages, Python env, OrangeFS and MPICH with
# ROMIO's pvfs2 driver built from source once, the C build, the Kubernetes binaries, the images) and runs
# every tier — unit, MPI integration, OrangeFS on loopback servers, tooling lints and end to end on a
# real API server with a real node — in one pytest session.
# Sources of OrangeFS/IOR: upstream by default, or PFSLAYOUT_SOURCE_MIRROR (docs/images.md).
# Extra arguments go to pytest (e.g. `e2e/test-all.sh -m unit`, or test paths to run only those).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s\n' "$*" >&2; }

step "host packages"
e2e/setup/host-packages.sh

step "python environment"
venv=$(e2e/setup/python-env.sh)
export PATH="$venv/bin:$PATH"
# The venv is shared by every checkout on the machine (keyed by pyproject.toml) and its editable install
# points at whichever checkout linked it last; this checkout's sources come first for this run and every
# process it starts.
export PYTHONPATH="$root/operator/src${PYTHONPATH:+:$PYTHONPATH}"

step "OrangeFS and MPICH (ROMIO ufs+pvfs2) from source, cached under ~/.cache by version and content hash"
# Built once per machine; the OrangeFS tier and the images use the same trees. Without any source (no
# mirror, upstream out of reach) the OrangeFS tier skips and says why; any other failure fails here.
if [ -z "${ORANGEFS_PREFIX:-}" ]; then
  if ORANGEFS_PREFIX=$(images/build/host.sh orangefs 2>"${TMPDIR:-/tmp}/pfslayout-orangefs-build.log"); then
    export ORANGEFS_PREFIX
  elif grep -q '^fetch-source: ' "${TMPDIR:-/tmp}/pfslayout-orangefs-build.log"; then
    PFSLAYOUT_ORANGEFS_UNAVAILABLE=$(grep '^fetch-source: ' "${TMPDIR:-/tmp}/pfslayout-orangefs-build.log" | tail -n 1)
    export PFSLAYOUT_ORANGEFS_UNAVAILABLE
    echo "OrangeFS tier will skip: $PFSLAYOUT_ORANGEFS_UNAVAILABLE" >&2
  else
    tail -n 40 "${TMPDIR:-/tmp}/pfslayout-orangefs-build.log" >&2
    exit 1
  fi
fi
if [ -n "${ORANGEFS_PREFIX:-}" ] && [ -z "${PFSLAYOUT_MPICH_PREFIX:-}" ]; then
  PFSLAYOUT_MPICH_PREFIX=$(images/build/host.sh mpich)
  export PFSLAYOUT_MPICH_PREFIX
fi

if [ -x shim/build.sh ]; then
  step "C shim and probe (CMake, Open MPI and MPICH) + C unit tests"
  shim/build.sh --test
fi

step "Kubernetes binaries and the real node's images (cached under ~/.cache by version and content)"
e2e/cluster.sh build

step "pytest: every tier"
# Test paths given (a path with a '/', e.g. e2e/tests/test_lab_smoke.py[::name]) replace every tier's;
# options alone (-m, -k, -x) narrow every tier.
paths=(operator/tests shim/tests e2e/tests)
for arg in "$@"; do
  case $arg in
    -*) ;;
    */*) [ -e "${arg%%::*}" ] && paths=() ;;
  esac
done
exec python -m pytest -c operator/pyproject.toml --rootdir "$root" "${paths[@]}" "$@"
