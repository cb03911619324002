#!/usr/bin/env bash
# Bring-up timings of the local test cluster, measured in one run and printed (not asserted anywhere).
#   e2e/harness/bench/bringup.sh          warm: `build` with everything cached, `up` from nothing, `up` again, `down`
#   e2e/harness/bench/bringup.sh --relink the same, but `build` first rebuilds every binary into an empty
#                                 temporary cache while reusing the Go module and build caches
#   e2e/harness/bench/bringup.sh --cold   the same, but `build` first runs against an empty temporary cache
#                                 (downloads every module and compiles everything: ~14 min on 2 cores,
#                                 ~7 GiB of temporary disk, removed afterwards)
# Uses its own state directory and ports, so a running shared cluster is not disturbed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-warm}
export PFSLAYOUT_E2E_MODE=local  # the local cluster's timings (kind has its own state and nodes)
case $mode in warm|--cold|--relink) ;; *) echo "usage: bringup.sh [--cold|--relink]" >&2; exit 2 ;; esac

work=$(mktemp -d)
cleanup() {
  PFSLAYOUT_E2E_STATE=$work/state "$here/cluster.sh" down >/dev/null 2>&1 || true
  chmod -R u+w "$work" 2>/dev/null || true   # the Go module cache is read-only
  rm -rf "$work"
}
trap cleanup EXIT

free_base() {
  local base p
  for base in $(seq 28000 16 31000); do
    for p in $(seq "$base" $((base + 9))); do
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue 2
    done
    echo "$base"; return 0
  done
  return 1
}
base=$(free_base)
export PFSLAYOUT_E2E_STATE=$work/state PFSLAYOUT_E2E_PORT_BASE=$base PFSLAYOUT_E2E_MODE=local

timed() { # command...: prints "$label  seconds"
  local t0 ms
  t0=$(date +%s%N)
  "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log" >&2; echo "FAILED: $label" >&2; exit 1; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-44s %6d.%d s\n' "$label" $((ms / 1000)) $((ms % 1000 / 100))
}

echo "local test cluster bring-up ($(nproc) cores, $(date -u +%FT%TZ))"
if [ "$mode" = --cold ]; then
  label="build, cold (empty module + build cache)"
  PFSLAYOUT_CACHE=$work/cache timed "$here/cluster.sh" build
  export PFSLAYOUT_CACHE=$work/cache
elif [ "$mode" = --relink ]; then
  go_cache=${PFSLAYOUT_CACHE:-$HOME/.cache/pfs-layout-operator}/go
  export PFSLAYOUT_GOCACHE=${PFSLAYOUT_GOCACHE:-$go_cache/build} PFSLAYOUT_GOMODCACHE=${PFSLAYOUT_GOMODCACHE:-$go_cache/mod}
  label="build, binaries only (Go caches warm)"
  PFSLAYOUT_CACHE=$work/cache timed "$here/cluster.sh" build
  export PFSLAYOUT_CACHE=$work/cache
fi
label="build, warm (everything cached)"; timed "$here/cluster.sh" build
label="up from nothing (binaries cached)"; timed "$here/cluster.sh" up
label="up again (already running)"; timed "$here/cluster.sh" up
label="down (reverse order, by PID)"; timed "$here/cluster.sh" down
