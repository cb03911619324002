#!/usr/bin/env bash
# Prints the path of a virtualenv holding the pinned dependencies of operator/pyproject.toml with the
# checkout's three packages installed in editable mode: pfslayout (operator/), the lab (lab/) and the
# test helpers (e2e/testkit/). The venv lives under ~/.cache keyed by a hash of the three pyproject.toml
# files, so a second run (or a second clone) reuses it and only re-links the packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
projects=("$root/operator" "$root/lab" "$root/e2e/testkit")
key=$(cat "${projects[@]/%//pyproject.toml}" | sha256sum | cut -c1-16)
venv="${PFSLAYOUT_VENV:-$HOME/.cache/pfs-layout-operator/venv-$key}"
python=${PYTHON:-python3}

# Several test runs (or engineers) may ask at once: one builds, the others wait for it.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

editable=()
for p in "${projects[@]}"; do editable+=(-e "$p"); done
if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip==26.3 >&2
  "$venv/bin/pip" install -q -e "$root/operator[test]" -e "$root/lab" -e "$root/e2e/testkit" >&2
  touch "$venv/.complete"
fi
# Always re-link: the cached venv may point at another clone.
"$venv/bin/pip" install -q --no-deps --no-build-isolation "${editable[@]}" >&2 2>/dev/null \
  || "$venv/bin/pip" install -q --no-deps "${editable[@]}" >&2
echo "$venv"
