#!/usr/bin/env bash
# Prints the path of a virtualenv holding the pinned dependencies of operator/pyproject.toml with the
# checkout's pfslayout installed in editable mode. The venv lives under ~/.cache keyed by a hash of
# pyproject.toml, so a second run (or a second clone) reuses it and only re-links the package.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
key=$(sha256sum "$root/operator/pyproject.toml" | cut -c1-16)
venv="${PFSLAYOUT_VENV:-$HOME/.cache/pfs-layout-operator/venv-$key}"
python=${PYTHON:-python3}

# Several test runs (or engineers) may ask at once: one builds, the others wait for it.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if [ ! -x "$venv/bin/python" ] || [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --upgrade pip==26.3 >&2
  "$venv/bin/pip" install -q -e "$root/operator[test]" >&2
  touch "$venv/.complete"
fi
# Always re-link: the cached venv may point at another clone.
"$venv/bin/pip" install -q --no-deps --no-build-isolation -e "$root/operator" >&2 2>/dev/null \
  || "$venv/bin/pip" install -q --no-deps -e "$root/operator" >&2
echo "$venv"
