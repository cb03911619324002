"""ruff (on the package, its tests and benchmarks, and the performance lab) and mypy, as configured in
operator/pyproject.toml, find nothing.

Any finding fails the test with the linter's own report, so a review never has to point out an unused
import, an unsorted import block, a missing annotation or a type error by hand. Both tools are pinned
in the `test` extra.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tooling

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "operator" / "pyproject.toml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_ruff_finds_nothing() -> None:
    res = _run("ruff", "check", "--config", str(CONFIG), "--no-cache", "operator/src", "operator/tests",
               "operator/bench", "e2e/lab", "e2e/tests", "e2e/bench")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_on_pfslayout_finds_nothing() -> None:
    res = _run("mypy", "--config-file", str(CONFIG))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout
