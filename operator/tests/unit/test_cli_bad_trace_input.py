"""Bad trace input at the CLI: a truncated shim trace is one line naming the file and what is missing,
exit 2, never a traceback (the Darshan cases are in test_plan_darshan_counters.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pfstestkit.cli import one_line_error, run_inproc

SMALL = Path(__file__).resolve().parents[1] / "data" / "shim-small"


@pytest.mark.parametrize(("keep", "field"), [(40, "header"), (64 + 20, "record_count"),
                                           (64 + 40 * 2 + 4, "file table entry 0")])
def test_truncated_shim_trace_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, keep: int,
                                          field: str) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(SMALL, traces)
    victim = sorted(traces.glob("*.pfstrace"))[1]
    victim.write_bytes(victim.read_bytes()[:keep])
    r = run_inproc(capsys, "plan", "--trace", str(traces), "--format", "shim", "--servers", "4")
    one_line_error(r, f"{victim}: {field}")
    assert "truncated" in r.err and "rerun the traced job" in r.err
