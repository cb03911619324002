"""Darshan DXT via pydarshan: the DXT example log that ships in the pinned darshan wheel (IOR with HDF5
on 4 ranks, DXT_POSIX and DXT_MPIIO), a log without DXT, and a file that is no Darshan log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pfslayout.errors import InputError
from pfslayout.traces import (
    OP_READ,
    OP_WRITE,
    detect_format,
    load_trace,
    read_darshan_log,
)

pytestmark = pytest.mark.unit

darshan = pytest.importorskip("darshan")
EXAMPLES = Path(darshan.__file__).parent / "examples" / "example_logs"
DXT_LOG = EXAMPLES / "ior_hdf5_example.darshan"
NO_DXT_LOG = EXAMPLES / "example.darshan"


def test_wheel_carries_libdarshan_util_and_the_example_logs() -> None:
    libs = list((Path(darshan.__file__).parent.parent / "darshan.libs").glob("libdarshan-util*"))
    assert libs, "darshan==3.5.0's wheel should bundle libdarshan-util"
    assert DXT_LOG.is_file() and NO_DXT_LOG.is_file()


def test_dxt_mpiio_log() -> None:
    report = darshan.DarshanReport(str(DXT_LOG), read_all=False)
    report.mod_read_all_dxt_records("DXT_MPIIO")
    expected = sum(r["write_count"] + r["read_count"] for r in report.records["DXT_MPIIO"].to_df())
    t = read_darshan_log(DXT_LOG)
    assert len(t) == expected == 59
    assert t.nprocs == 4 and sorted(set(t.rank.tolist())) == [0, 1, 2, 3]
    assert t.files == ["/global/cscratch1/sd/ssnyder/test123.h5"]
    assert set(t.op.tolist()) == {OP_READ, OP_WRITE}
    assert np.all(t.end >= t.start) and np.all(t.size > 0)
    assert t.node_of_rank is not None and t.node_of_rank.tolist() == [0, 0, 0, 0]  # all on nid00097
    # IOR's 256 KiB transfers dominate the data file
    assert int(np.sum(t.size == 262144)) > 0


def test_load_trace_derives_within_bounds() -> None:
    assert detect_format(DXT_LOG) == "darshan"
    t = load_trace(DXT_LOG)
    assert t.p is not None and t.p.min() >= 1 and t.p.max() <= 4
    assert np.all(t.m <= t.p)  # type: ignore[operator]
    assert t.dominant_size.tolist() == [262144]  # type: ignore[union-attr]


def test_posix_module_can_be_chosen() -> None:
    t = read_darshan_log(DXT_LOG, module="DXT_POSIX")
    assert len(t) > 0 and t.nprocs == 4
    with pytest.raises(InputError, match="unknown DXT module"):
        read_darshan_log(DXT_LOG, module="POSIX")


def test_log_without_dxt_names_the_fix() -> None:
    with pytest.raises(InputError, match="DXT_ENABLE_IO_TRACE=1"):
        read_darshan_log(NO_DXT_LOG)


def test_not_a_darshan_log(tmp_path: Path) -> None:
    bogus = tmp_path / "x.darshan"
    bogus.write_bytes(b"3.41\0\0\0\0 not really a log" * 4)
    with pytest.raises(InputError, match="not a readable Darshan log"):
        read_darshan_log(bogus)
