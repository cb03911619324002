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
    assert np.all(t.m <= t.p)
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


def test_dxt_mpiio_marks_collective_calls_from_the_mpiio_counters() -> None:
    """DXT segments do not say whether a call was collective; the log's MPI-IO counters do, per file. The
    example log's IOR used independent calls only (MPIIO_INDEP_WRITES 23, MPIIO_COLL_* 0): nothing marked.
    DXT_POSIX knows nothing of MPI calls: no flag at all."""
    t = read_darshan_log(DXT_LOG)
    assert t.collective is not None and len(t.collective) == len(t) and not t.collective.any()
    assert read_darshan_log(DXT_LOG, module="DXT_POSIX").collective is None


@pytest.mark.parametrize(("counters", "reads", "writes"), [
    ({"MPIIO_COLL_WRITES": 8}, False, True),  # a checkpoint written with MPI_File_write_at_all only
    ({"MPIIO_COLL_READS": 4, "MPIIO_COLL_WRITES": 4}, True, True),
    ({"MPIIO_COLL_WRITES": 8, "MPIIO_INDEP_WRITES": 1}, False, False),  # mixed: no segment attributable
    ({"MPIIO_COLL_READS": 2, "MPIIO_NB_READS": 1, "MPIIO_COLL_WRITES": 3, "MPIIO_SPLIT_WRITES": 0}, False, True),
    ({"MPIIO_INDEP_READS": 36, "MPIIO_INDEP_WRITES": 23}, False, False),  # the example log's record
    ({}, False, False),
])
def test_all_collective_reads_the_counter_record(counters: dict[str, int], reads: bool, writes: bool) -> None:
    from pfslayout.traces.darshan_log import all_collective
    assert (all_collective(counters, "READS"), all_collective(counters, "WRITES")) == (reads, writes)
