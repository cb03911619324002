"""Shim binary trace: the reference writer and the reader agree with docs/trace-format.md byte for byte,
per-rank files merge by path, and every malformed file is a one-line error naming file and field."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pfslayout.errors import InputError
from pfslayout.traces import (
    OP_READ,
    OP_WRITE,
    Trace,
    read_csv_trace,
    read_shim_trace_dir,
    write_shim_trace,
)
from pfslayout.traces.shim import HEADER_DTYPE, NO_REPLICA, REC_COLLECTIVE, record_dtype

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data"


def one_rank(path: Path, **over: object) -> Path:
    args: dict[str, object] = {
        "rank": 0, "comm_size": 2, "files": ["/d/a", "/d/b"], "start": np.array([0.0, 1.0, 2.0]),
        "end": np.array([0.5, 1.5, 2.5]), "offset": np.array([0, 100, 0]), "size": np.array([100, 100, 7]),
        "file_id": np.array([0, 0, 1]), "op": np.array([OP_WRITE, OP_WRITE, OP_READ]), "node_id": 0,
        "ranks_on_node": 2, "epoch": 10.0,
    }
    args.update(over)
    return write_shim_trace(path, **args)  # type: ignore[arg-type]


def test_layout_matches_the_documented_offsets(tmp_path: Path) -> None:
    path = one_rank(tmp_path / "run.rank-000000.pfstrace", flags=np.array([1, 0, 2]))
    raw = path.read_bytes()
    assert raw[:8] == b"PFSTRACE"
    version, header_size, record_size, flags, rank, comm, node, per_node = struct.unpack_from("<4H4I", raw, 8)
    assert (version, header_size, record_size, flags, rank, comm, node, per_node) == (1, 64, 40, 0, 0, 2, 0, 2)
    count, table_at, epoch, file_count, dropped = struct.unpack_from("<QQdII", raw, 32)
    assert (count, table_at, epoch, file_count, dropped) == (3, 64 + 3 * 40, 10.0, 2, 0)
    start, end, offset, size, file_id, op, rflags, replica = struct.unpack_from("<ddQQIBBH", raw, 64 + 40)
    assert (start, end, offset, size, file_id, op, rflags, replica) == (1.0, 1.5, 100, 100, 0, 2, 0, NO_REPLICA)
    fid, length = struct.unpack_from("<II", raw, table_at)
    assert (fid, length) == (0, 4) and raw[table_at + 8: table_at + 12] == b"/d/a"
    assert len(raw) == table_at + 2 * (8 + 4)
    assert HEADER_DTYPE.itemsize == 64 and record_dtype().itemsize == 40


def test_round_trip_and_collective_flag(tmp_path: Path) -> None:
    one_rank(tmp_path / "run.rank-000000.pfstrace", flags=np.array([REC_COLLECTIVE, 0, 0]))
    t = read_shim_trace_dir(tmp_path)
    assert len(t) == 3 and t.files == ["/d/a", "/d/b"] and t.nprocs == 2
    assert list(t.offset) == [0, 100, 0] and list(t.size) == [100, 100, 7]
    assert list(t.op) == [OP_WRITE, OP_WRITE, OP_READ] and list(t.file_id) == [0, 0, 1]
    assert list(t.collective) == [True, False, False]  # type: ignore[arg-type]
    assert np.allclose(t.start, [0, 1, 2]) and np.allclose(t.end, [0.5, 1.5, 2.5])


def test_fixture_directory_equals_the_csv_fixture() -> None:
    shim = read_shim_trace_dir(DATA / "shim-small")
    csv = read_csv_trace(DATA / "trace-small.csv")
    assert shim.nprocs == 4 and sorted(shim.files) == sorted(csv.files)

    def rows(t: Trace) -> list[tuple[Any, ...]]:
        return sorted(zip(t.rank.tolist(), t.start.round(6).tolist(), t.end.round(6).tolist(), t.offset.tolist(),
                          t.size.tolist(), t.op.tolist(), [t.files[i] for i in t.file_id]))

    assert rows(shim) == rows(csv)
    assert shim.node_of_rank is not None and list(shim.node_of_rank) == [0, 0, 1, 1]


def test_epochs_align_ranks_and_file_ids_merge_by_path(tmp_path: Path) -> None:
    one_rank(tmp_path / "r0.pfstrace", epoch=100.0)
    # rank 1 numbers its files the other way round and started its clock 2 s later
    write_shim_trace(tmp_path / "r1.pfstrace", rank=1, comm_size=2, files=["/d/b", "/d/a"], file_ids=[5, 9],
                     start=np.array([0.0]), end=np.array([1.0]), offset=np.array([0]), size=np.array([1]),
                     file_id=np.array([9]), op=np.array([OP_READ]), node_id=1, epoch=102.0)
    t = read_shim_trace_dir(tmp_path)
    last = int(np.flatnonzero(t.rank == 1)[0])
    assert t.files[t.file_id[last]] == "/d/a"
    assert t.start[last] == pytest.approx(2.0)
    assert list(t.node_of_rank) == [0, 1]  # type: ignore[arg-type]


def test_longer_records_of_a_later_version_still_read(tmp_path: Path) -> None:
    # a future writer appends 8 bytes per record and says so in record_size; v1 fields stay put
    path = one_rank(tmp_path / "x.pfstrace")
    raw = bytearray(path.read_bytes())
    head = np.frombuffer(bytes(raw[:64]), dtype=HEADER_DTYPE).copy()
    recs = np.frombuffer(bytes(raw[64:64 + 120]), dtype=record_dtype())
    wide = np.zeros(3, dtype=record_dtype(48))
    for name in recs.dtype.names:  # type: ignore[union-attr]
        wide[name] = recs[name]
    head["record_size"] = 48
    head["file_table_offset"] = 64 + 3 * 48
    path.write_bytes(head.tobytes() + wide.tobytes() + bytes(raw[64 + 120:]))
    t = read_shim_trace_dir(path)
    assert list(t.offset) == [0, 100, 0] and list(t.size) == [100, 100, 7]


def patch(path: Path, offset: int, fmt: str, value: object) -> None:
    raw = bytearray(path.read_bytes())
    struct.pack_into(fmt, raw, offset, value)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda p: patch(p, 0, "8s", b"NOTATRAC"), "magic"),
        (lambda p: patch(p, 8, "<H", 2), "version"),
        (lambda p: patch(p, 12, "<H", 32), "record_size"),
        (lambda p: patch(p, 32, "<Q", 1000), "record_count"),
        (lambda p: patch(p, 64 + 36, "B", 7), "record 0: op"),
        (lambda p: patch(p, 64 + 40 + 32, "<I", 44), "record 1: file_id"),
        (lambda p: patch(p, 40, "<Q", 10**6), "file_table_offset"),
        (lambda p: p.write_bytes(p.read_bytes()[:-3]), "file table entry 1"),
        (lambda p: p.write_bytes(p.read_bytes()[:30]), "header"),
    ],
)
def test_malformed_files_name_the_field(tmp_path: Path, mutate: Callable[[Path], None], field: str) -> None:
    path = one_rank(tmp_path / "run.rank-000000.pfstrace")
    mutate(path)
    with pytest.raises(InputError) as err:
        read_shim_trace_dir(tmp_path)
    assert f"{path}: {field}" in str(err.value) and "\n" not in str(err.value)


def test_directory_problems(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"holds no \*.pfstrace files"):
        read_shim_trace_dir(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        read_shim_trace_dir(tmp_path / "nope")
    one_rank(tmp_path / "a.pfstrace")
    one_rank(tmp_path / "b.pfstrace")
    with pytest.raises(InputError, match="rank: 0 also appears"):
        read_shim_trace_dir(tmp_path)
