"""Helpers (no tests) for the cost/plan/cost-map CLI tests: in-process runs and the real entry point in subprocesses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pfslayout.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_inproc(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return Result(code, cap.out, cap.err)


def entry_point() -> list[str]:
    # the console script installed beside this interpreter is the real entry point
    script = Path(sys.executable).parent / "pfslayout"
    if script.exists():
        return [str(script)]
    found = shutil.which("pfslayout")
    return [found] if found else [sys.executable, "-c", "from pfslayout.cli import main; main()"]


def run_wide(*args: str) -> str:
    """The real entry point's stdout for ``args`` (it must succeed), with a terminal wide enough that rich's
    tables keep every cell on one line."""
    return subprocess.run([*entry_point(), *args], capture_output=True, text=True, check=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"}).stdout


def run_parallel(commands: dict[str, list[str]], cwd: Path) -> dict[str, Result]:
    """Start every command at once (CLI start-up dominates), then collect."""
    procs = {k: subprocess.Popen(entry_point() + v, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for k, v in commands.items()}
    out = {}
    for k, p in procs.items():
        o, e = p.communicate(timeout=120)
        out[k] = Result(p.returncode, o, e)
    return out


def one_line_error(r: Result, field: str) -> None:
    assert r.code == 2, (r.code, r.err)
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, r.err
    assert field in lines[0], lines[0]
    assert "Traceback" not in r.err


_REAL: dict[str, Result] = {}


def real_entry_point_runs(tmp_dir: Path) -> dict[str, Result]:
    """The real-entry-point cases of the cost/plan/cost-map tests (one success, one bad input per command),
    started together once per session: each CLI start-up costs about a second. The remaining cases run
    in process through the same ``main``."""
    if _REAL:
        return _REAL
    bad = tmp_dir / "bad.yaml"
    bad.write_text("processes: 4\nrequest_sizes: {4096: 1}\nprocs_per_node: 9\n")
    base = ["--p", "64", "--n", "16", "--m", "2", "--s", "1048576", "--json"]
    commands = {
        "cost_ok": ["cost", "--layout", "1-DV", *base],
        "cost_bad_g": ["cost", "--layout", "2-D", "--g", "0", *base],
        "plan_bad": ["plan", "--workload", str(bad), "--servers", "8", "--json"],
        "map_bad": ["cost-map", "--n", "-1", "--json"],
    }
    _REAL.update(run_parallel(commands, tmp_dir))
    return _REAL
