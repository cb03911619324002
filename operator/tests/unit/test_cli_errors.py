"""The CLI's bad-input contract: one readable line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from pfslayout.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_unknown_command_is_one_line_and_exit_2() -> None:
    result = run_cli("no-such-command")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "no-such-command" in lines[0]
    assert "Traceback" not in result.stderr
