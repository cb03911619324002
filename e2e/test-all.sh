#!/usr/bin/env bash
# The one test command: sets up a fresh Debian machine (packages, Python env, the C build, the Kubernetes
# binaries) and runs every tier — unit, MPI integration, OrangeFS (when ORANGEFS_PREFIX is installed),
# tooling lints and end to end on a real API server — in one pytest session.
# Extra arguments go to pytest (e.g. `e2e/test-all.sh -m unit`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s\n' "$*" >&2; }

step "host packages"
e2e/setup/host-packages.sh

step "python environment"
venv=$(e2e/setup/python-env.sh)
export PATH="$venv/bin:$PATH"

# A hand-built OrangeFS (outside the repo) turns on the OrangeFS tier; without it that tier skips.
if [ -z "${ORANGEFS_PREFIX:-}" ] && [ -x /opt/orangefs/sbin/pvfs2-server ]; then
  export ORANGEFS_PREFIX=/opt/orangefs
fi

if [ -x shim/build.sh ]; then
  step "C shim and probe (CMake, Open MPI and MPICH) + C unit tests"
  shim/build.sh --test
fi

if [ -x e2e/cluster.sh ]; then
  step "Kubernetes binaries (cached under ~/.cache by version)"
  e2e/cluster.sh build
fi

step "pytest: every tier"
exec python -m pytest -c operator/pyproject.toml --rootdir "$root" \
  operator/tests shim/tests e2e/tests "$@"
