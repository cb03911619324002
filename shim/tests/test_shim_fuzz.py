"""The shim's C config parser under libFuzzer for a bounded time (issue 14 item 3): clang's fuzzer with
the address and undefined-behaviour sanitizers, seeded with every config of the shared vectors
(`shim/tests/fuzz/fuzz.sh`). A finding (crash, leak, UB, or a refusal that is not one line) fails the test
and leaves the input in the work directory. `PFSLAYOUT_FUZZ_SECONDS` sets the time (default 60)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(900)

FUZZ = Path(__file__).resolve().parent / "fuzz" / "fuzz.sh"


def test_config_parser_survives_bounded_fuzzing(tmp_path: Path) -> None:
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (e2e/harness/setup/host-packages.sh installs it with libclang-rt-14-dev)")
    seconds = int(os.environ.get("PFSLAYOUT_FUZZ_SECONDS", "60"))
    proc = subprocess.run([str(FUZZ), str(seconds), str(tmp_path)], capture_output=True, text=True,
                          timeout=seconds + 600, check=False)
    out = proc.stdout + proc.stderr
    findings = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    assert proc.returncode == 0 and not findings, f"findings {findings}:\n{out[-4000:]}"
    # libFuzzer's own count: only a real run of the instrumented parser prints it
    runs = re.search(r"stat::number_of_executed_units: (\d+)", out)
    assert runs and int(runs.group(1)) > 1000, out[-2000:]
    print(f"config parser: {int(runs.group(1)):,} executions in {seconds} s, no finding")
