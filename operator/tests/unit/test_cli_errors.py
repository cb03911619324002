"""The CLI's bad-input contract: one readable line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys


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


def test_render_from_a_binary_file_is_one_line_naming_it(tmp_path) -> None:  # noqa: ANN001
    """Found by test_cli_generated.py: bytes that are not UTF-8 ended in a UnicodeDecodeError traceback."""
    blob = tmp_path / "garbage.bin"
    blob.write_bytes(bytes(range(256)))
    result = run_cli("render", "fs-conf", "--from", str(blob))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"pfslayout: error: --from: {blob} is not YAML (UnicodeDecodeError); pass an OrangeFSCluster "
                     "manifest"], result.stderr
