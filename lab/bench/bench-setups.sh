#!/usr/bin/env bash
# The performance lab's benchmark (issue 13's goals): up → calibrate → validate → down for each setup —
# 4 and 8 servers, one and two client namespaces — with the reports in docs/results/setups/<setup>/ and
# one section each in docs/results.md. The headline setup (4 servers, 200 Mbit/s, one client namespace)
# also writes docs/results/lab-validate.json and runs `lab hybrid` twice. About 85 minutes on 2 cores; needs what `lab/lab check`
# checks. Usage: lab/bench/bench-setups.sh [SETUP...]   (SETUP as below, e.g. 4s-200mbit-1c; default all)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lab=$repo/lab/lab
# 8 servers get half the rate: 8 shaped links at full rate would need more than the 2 cores' software
# shaping can give (about a quarter of a core per 200 Mbit/s), and the clients would be CPU-bound.
all="4s-200mbit-1c 4s-200mbit-2c 8s-100mbit-1c 8s-100mbit-2c"
setups=${*:-$all}
if [ -z "${ORANGEFS_PREFIX:-}" ] || [ -z "${PFSLAYOUT_MPICH_PREFIX:-}" ] || [ -z "${PFSLAYOUT_SHIM_PREFIX:-}" ]; then
  eval "$("$repo/images/build/host.sh" env)"  # OrangeFS, MPICH and pfsprobe, built once per machine
fi
cd "$repo"  # the reports quote their command lines: relative paths read the same in every checkout
"$lab" check
trap '"$lab" down >/dev/null 2>&1 || true' EXIT
for setup in $setups; do
  IFS=- read -r s rate c <<<"$setup"
  servers=${s%s}
  k=${c%c}
  printf '\n==> %s: %s servers at %s, %s client namespace(s)\n' "$setup" "$servers" "$rate" "$k" >&2
  "$lab" down >/dev/null
  "$lab" up --servers "$servers" --rate "$rate" --client-namespaces "$k"
  # calibration: p = 1, 2, 4 on one node; with two nodes up to 8 (packed and spread). The full factorial
  # (profile standard) at sizes none of the validation's: with two client namespaces it holds the spread
  # cells that tell the shared-core term e_shared from e (docs/cost-model.md "Shared cores").
  "$lab" calibrate --ranks 4 --profile standard --sizes 8K,64K,1M
  "$lab" validate --report-dir "docs/results/setups/$setup"
  if [ "$setup" = 4s-200mbit-1c ]; then
    cp "docs/results/setups/$setup/lab-validate.json" "docs/results/setups/$setup/lab-validate.png" docs/results/
    # item 6: the mixed workload through the shim's replica routing, with this setup's calibration: read
    # back once (~4 min), then a read-mostly version read back 16 times (~15 min; the break-even line of
    # the first says why 16)
    "$lab" hybrid
    "$lab" hybrid --read-passes 16 --rounds 3
  fi
  "$lab" down
done
