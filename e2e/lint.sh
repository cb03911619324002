#!/usr/bin/env bash
# The lint command: every static check of the repository, fast first, stopping at the first check with a
# finding (exit 1; bad usage exits 2). Each finding names file, line and rule. Builds nothing.
#   1. ruff        every Python file, from the root pyproject.toml
#   2. shellcheck  every shell script (a .sh name or a sh/bash shebang), following sourced files
#   3. actionlint  .github/workflows/*.yaml (their run: scripts through shellcheck)
#   4. hadolint    images/*/Dockerfile
#   5. c           every C source of shim/ parsed with -Wall -Wextra -Werror and its CMake target's flags
#                  (mpicc.mpich; clang for the fuzzer); OrangeFS's headers from ORANGEFS_PREFIX or the
#                  cached host build, else the sources that need them are listed as not checked
#   6. mypy        strict over the packages and crds/, then the tests and benchmarks with their profile
# Usage: e2e/lint.sh [--only CHECK[,CHECK...]]. The checks and their command lines live in
# e2e/testkit/pfstestkit/lint.py; the tools come from the project's venv (e2e/harness/setup/python-env.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PFSLAYOUT_LINT_START=$EPOCHREALTIME

case "${1:-}" in
  -h|--help) sed -n '2,12p' "$0" | cut -c3-; exit 0 ;;
esac
# The arguments first: plain Python, nothing set up yet.
PYTHONPATH="$root/e2e/testkit" python3 -m pfstestkit.lint --validate "$@" || exit 2

echo "==> set-up (host packages, python environment)"
e2e/harness/setup/host-packages.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! venv=$(e2e/harness/setup/python-env.sh 2>"$log"); then
  cat "$log" >&2
  echo "lint: the python environment could not be set up (above)" >&2
  exit 1
fi
if ! PFSLAYOUT_ACTIONLINT=$(e2e/harness/setup/actionlint.sh 2>"$log"); then
  cat "$log" >&2
  echo "lint: actionlint could not be set up (above)" >&2
  exit 1
fi
export PFSLAYOUT_ACTIONLINT
# The venv is shared by every checkout (its editable installs point at whichever linked last): this
# checkout's sources come first.
export PYTHONPATH="$root/operator/src:$root/lab:$root/e2e/testkit${PYTHONPATH:+:$PYTHONPATH}"
"$venv/bin/python" -m pfstestkit.lint "$@"
