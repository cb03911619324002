#!/usr/bin/env bash
# The one test command: sets up a fresh Debian machine (packages, the Python env, and what the selected
# tiers need — OrangeFS and MPICH with ROMIO's pvfs2 driver, the C shim and probe, Helm, the Kubernetes
# binaries and the real node's images, each built once and cached under ~/.cache by version and content)
# and runs the tiers — unit, integration, orangefs, e2e, lab; a test's tier is its folder
# (e2e/testkit/pfstestkit/tiers.py) — in one pytest session, tests that share nothing side by side.
# Extra arguments go to pytest: `-m unit` (a tier expression) or test paths run just those and build
# only what they need. An unknown tier or a missing path fails at once, before anything is installed.
# Sources of OrangeFS/IOR: upstream by default, or PFSLAYOUT_SOURCE_MIRROR (docs/images.md).
# PFSLAYOUT_TEST_WORKERS sets the number of pytest-xdist workers (1: none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s (%s)\n' "$*" "$(date +%T)" >&2; }

# The arguments first: plain Python, nothing installed yet.
plan=$(PYTHONPATH="$root/e2e/testkit" python3 -m pfstestkit.tiers plan "$@") || exit 2
eval "$plan"   # TIERS, STEPS, HAS_PATHS
needs() { [[ " $STEPS " == *" $1 "* ]]; }

step "host packages"
e2e/harness/setup/host-packages.sh

step "python environment"
venv=$(e2e/harness/setup/python-env.sh)
export PATH="$venv/bin:$PATH"
# The venv is shared by every checkout on the machine (keyed by the pyproject.toml files) and its editable
# installs point at whichever checkout linked them last; this checkout's sources come first for this run
# and every process it starts.
export PYTHONPATH="$root/operator/src:$root/lab:$root/e2e/testkit${PYTHONPATH:+:$PYTHONPATH}"

if needs orangefs && [ -z "${ORANGEFS_PREFIX:-}" ]; then
  step "OrangeFS and MPICH (ROMIO ufs+pvfs2) from source"
  # Without any source (no mirror, upstream out of reach) the OrangeFS tier skips and says why; any
  # other failure fails here.
  log=${TMPDIR:-/tmp}/pfslayout-orangefs-build.log
  if ORANGEFS_PREFIX=$(images/build/host.sh orangefs 2>"$log"); then
    export ORANGEFS_PREFIX
  elif grep -q '^fetch-source: ' "$log"; then
    PFSLAYOUT_ORANGEFS_UNAVAILABLE=$(grep '^fetch-source: ' "$log" | tail -n 1)
    export PFSLAYOUT_ORANGEFS_UNAVAILABLE
    echo "OrangeFS tier will skip: $PFSLAYOUT_ORANGEFS_UNAVAILABLE" >&2
  else
    tail -n 40 "$log" >&2
    exit 1
  fi
fi
if needs orangefs && [ -n "${ORANGEFS_PREFIX:-}" ] && [ -z "${PFSLAYOUT_MPICH_PREFIX:-}" ]; then
  PFSLAYOUT_MPICH_PREFIX=$(images/build/host.sh mpich)
  export PFSLAYOUT_MPICH_PREFIX
fi

if needs shim; then
  step "C shim and probe (CMake, Open MPI and MPICH) + C unit tests"
  shim/build.sh --test
fi

if needs cluster; then
  step "Kubernetes binaries and the real node's images"
  e2e/harness/cluster.sh build
elif needs helm; then
  step "Helm"
  e2e/harness/cluster.sh build helm
fi

paths=()
[ "$HAS_PATHS" = 1 ] || paths=(operator/tests shim/tests lab/tests e2e/tests)
# Workers: tiers that compute get one per core. With the e2e tier the default stays one process for now:
# the lanes' first full run side by side (4 workers) stalled with only the serial lane left (2026-11-27,
# not yet understood), so `PFSLAYOUT_TEST_WORKERS=3` runs them side by side only when asked.
if needs cluster; then workers=${PFSLAYOUT_TEST_WORKERS:-1}; else workers=${PFSLAYOUT_TEST_WORKERS:-$(nproc)}; fi
xdist=()
[ "$workers" -le 1 ] || xdist=(-n "$workers" --dist loadgroup)

stop_cluster=0
audit_dir=
# shellcheck disable=SC2329  # run by the EXIT trap
finish() {
  [ -z "$audit_dir" ] || rm -rf "$audit_dir"
  if [ "$stop_cluster" = 1 ]; then step "test cluster down"; e2e/harness/cluster.sh down >/dev/null || true; fi
}
trap finish EXIT
if needs cluster; then
  # The cluster is brought up once for every worker (they join it; the last one out leaves it to us)
  # and stopped when the run ends, unless it was running before.
  step "test cluster up"
  if [ "$(e2e/harness/cluster.sh up)" = started ] && [ "${PFSLAYOUT_E2E_KEEP:-}" != 1 ]; then stop_cluster=1; fi
  # One scanner of the real node's containers for all workers; the hardening test reads its record here.
  audit_dir=$(mktemp -d "${TMPDIR:-/tmp}/pfslayout-audit.XXXXXX")
  export PFSLAYOUT_E2E_AUDIT_DIR=$audit_dir
fi

step "pytest: ${TIERS// /, }"
set +e
python -m pytest "${xdist[@]}" "${paths[@]}" "$@"
rc=$?
set -e
exit "$rc"
