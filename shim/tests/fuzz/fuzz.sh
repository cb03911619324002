#!/usr/bin/env bash
# Fuzzes the shim's config parser with libFuzzer for a bounded time (issue 14 item 3):
#   shim/tests/fuzz/fuzz.sh SECONDS WORKDIR
# Builds fuzz_config.c with the MPI-free shim core under clang's fuzzer, address and undefined-behaviour
# sanitizers, seeds the corpus with every config of operator/tests/vectors/shim-configs.json (accepted and
# refused), runs for SECONDS, and prints libFuzzer's final stats. Exit 0: no finding; otherwise libFuzzer's
# exit code, with the crashing input left in WORKDIR. Needs clang and libclang-rt-14-dev (Debian).
set -euo pipefail
seconds=${1:?usage: fuzz.sh SECONDS WORKDIR}
work=${2:?usage: fuzz.sh SECONDS WORKDIR}
here=$(cd "$(dirname "$0")" && pwd)
shim=$(cd "$here/../.." && pwd)
vectors="$shim/../operator/tests/vectors/shim-configs.json"
command -v clang >/dev/null || { echo "fuzz.sh: clang is missing; apt-get install clang libclang-rt-14-dev" >&2; exit 3; }
mkdir -p "$work/corpus"
# shellcheck disable=SC2046  # pkg-config's flags are words
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Wall -Wextra -Werror \
  -I"$shim/include" -I"$shim/common" \
  "$here/fuzz_config.c" "$shim"/src/{config,costmodel,route,ranges,syncq,trace}.c "$shim"/common/{jsonfield,paths}.c \
  $(pkg-config --cflags --libs jansson) -lm -lpthread -o "$work/fuzz_config"
python3 - "$vectors" "$work/corpus" <<'PY'
import json, sys, pathlib
doc = json.loads(pathlib.Path(sys.argv[1]).read_text())
out = pathlib.Path(sys.argv[2])
for kind in ("accepted", "refused"):
    for i, case in enumerate(doc[kind]):
        (out / f"{kind}-{i:03d}.json").write_text(case["text"])
PY
cd "$work"
exec ./fuzz_config -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=1024 \
  -artifact_prefix="$work/" corpus
