"""load_trace: format detection and the one entry point for every reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pfslayout.errors import InputError
from pfslayout.traces import detect_format, load_trace

DATA = Path(__file__).resolve().parents[1] / "data"


def test_detection(tmp_path: Path) -> None:
    assert detect_format(DATA / "trace-small.csv") == "csv"
    assert detect_format(DATA / "shim-small") == "shim"
    one = next((DATA / "shim-small").glob("*.pfstrace"))
    renamed = tmp_path / "trace.bin"
    renamed.write_bytes(one.read_bytes())
    assert detect_format(renamed) == "shim"
    csv_no_suffix = tmp_path / "trace"
    csv_no_suffix.write_text((DATA / "trace-small.csv").read_text())
    assert detect_format(csv_no_suffix) == "csv"
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(InputError, match="--format: cannot tell the format"):
        detect_format(other)
    with pytest.raises(InputError, match="does not exist"):
        detect_format(tmp_path / "none")


def test_load_derives() -> None:
    t = load_trace(DATA / "trace-small.csv", "csv")
    assert t.derived and t.p is not None and t.p.max() == 4
    assert t.summary()["requests"] == 11 and t.summary()["ranks"] == 4


def test_unknown_format() -> None:
    with pytest.raises(InputError, match="--format: unknown trace format 'hdf5'"):
        load_trace(DATA / "trace-small.csv", "hdf5")


def test_explicit_format_mismatch_is_a_clean_error() -> None:
    with pytest.raises(InputError):
        load_trace(DATA / "trace-small.csv", "shim")


def test_shim_run_without_requests_is_an_error(tmp_path: Path) -> None:
    import numpy as np

    from pfslayout.traces import write_shim_trace

    empty = np.zeros(0)
    write_shim_trace(tmp_path / "run.rank-000000.pfstrace", rank=0, comm_size=1, files=[], start=empty, end=empty,
                     offset=empty, size=empty, file_id=empty, op=empty)
    with pytest.raises(InputError, match="holds no I/O requests"):
        load_trace(tmp_path)
