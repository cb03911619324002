"""The shim's binary trace (docs/trace-format.md, version 1): reader for a directory of per-rank files
and the reference writer the C side is checked against.

Records are read with one ``numpy.fromfile`` per rank file through a structured dtype whose itemsize
is the header's ``record_size``, so later versions that append record fields still read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.model import OP_READ, OP_WRITE, Trace

MAGIC = b"PFSTRACE"
VERSION = 1
HEADER_SIZE = 64
RECORD_SIZE = 40
SUFFIX = ".pfstrace"

FLAG_DROPPED = 0x1
REC_COLLECTIVE = 0x1
REC_NONBLOCKING = 0x2
REC_EXPLICIT_OFFSET = 0x4
REC_REPLICA_ROUTED = 0x8
NO_REPLICA = 0xFFFF

HEADER_DTYPE = np.dtype([
    ("magic", "S8"), ("version", "<u2"), ("header_size", "<u2"), ("record_size", "<u2"), ("flags", "<u2"),
    ("rank", "<u4"), ("comm_size", "<u4"), ("node_id", "<u4"), ("ranks_on_node", "<u4"),
    ("record_count", "<u8"), ("file_table_offset", "<u8"), ("epoch", "<f8"), ("file_count", "<u4"),
    ("dropped", "<u4"),
])
assert HEADER_DTYPE.itemsize == HEADER_SIZE


def record_dtype(record_size: int = RECORD_SIZE) -> np.dtype:
    """The v1 record fields at their fixed offsets, with the stride the file declares."""
    return np.dtype({
        "names": ["start", "end", "offset", "size", "file_id", "op", "flags", "replica"],
        "formats": ["<f8", "<f8", "<u8", "<u8", "<u4", "u1", "u1", "<u2"],
        "offsets": [0, 8, 16, 24, 32, 36, 37, 38],
        "itemsize": record_size,
    })


def shim_file_name(rank: int, job: str = "run") -> str:
    return f"{job}.rank-{rank:06d}{SUFFIX}"


def write_shim_trace(path: str | Path, *, rank: int, comm_size: int, files: Sequence[str],
                     start: np.ndarray, end: np.ndarray, offset: np.ndarray, size: np.ndarray,
                     file_id: np.ndarray, op: np.ndarray, flags: np.ndarray | None = None,
                     replica: np.ndarray | None = None, node_id: int | None = None, ranks_on_node: int = 1,
                     epoch: float = 0.0, dropped: int = 0, file_ids: Sequence[int] | None = None) -> Path:
    """Write one rank's trace exactly as docs/trace-format.md specifies; returns the path.

    ``file_ids`` gives the table's id for each entry of ``files`` (default 0..len-1); records refer to
    those ids. This is the reference the C shim's writer is tested against.
    """
    path = Path(path)
    n = int(np.asarray(start).shape[0])
    recs = np.zeros(n, dtype=record_dtype())
    recs["start"] = start
    recs["end"] = end
    recs["offset"] = offset
    recs["size"] = size
    recs["file_id"] = file_id
    recs["op"] = op
    recs["flags"] = 0 if flags is None else flags
    recs["replica"] = NO_REPLICA if replica is None else replica
    ids = list(range(len(files))) if file_ids is None else list(file_ids)
    table = b"".join(
        np.array([fid, len(p.encode())], dtype="<u4").tobytes() + p.encode() for fid, p in zip(ids, files)
    )
    head = np.zeros(1, dtype=HEADER_DTYPE)
    head["magic"] = MAGIC
    head["version"] = VERSION
    head["header_size"] = HEADER_SIZE
    head["record_size"] = RECORD_SIZE
    head["flags"] = FLAG_DROPPED if dropped else 0
    head["rank"] = rank
    head["comm_size"] = comm_size
    head["node_id"] = rank if node_id is None else node_id
    head["ranks_on_node"] = ranks_on_node
    head["record_count"] = n
    head["file_table_offset"] = HEADER_SIZE + n * RECORD_SIZE
    head["epoch"] = epoch
    head["file_count"] = len(files)
    head["dropped"] = dropped
    with path.open("wb") as out:
        out.write(head.tobytes())
        out.write(recs.tobytes())
        out.write(table)
    return path


class _RankFile:
    """One parsed rank file: its header fields, records and local file table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        data_size = path.stat().st_size
        if data_size < HEADER_SIZE:
            raise InputError(f"{path}: header", f"file is {data_size} bytes, shorter than the 64-byte header",
                             "the trace was truncated; rerun the traced job")
        head = np.fromfile(path, dtype=HEADER_DTYPE, count=1)[0]
        if bytes(head["magic"]) != MAGIC:
            raise InputError(f"{path}: magic", f"is {bytes(head['magic'])!r}, not {MAGIC!r}",
                             "pass a directory of .pfstrace files written by libpfsshim")
        self.version = int(head["version"])
        if self.version != VERSION:
            raise InputError(f"{path}: version", f"is {self.version}; this reader knows version {VERSION}",
                             "upgrade pfslayout to read traces from a newer shim")
        header_size = int(head["header_size"])
        record_size = int(head["record_size"])
        if header_size < HEADER_SIZE:
            raise InputError(f"{path}: header_size", f"is {header_size}, smaller than {HEADER_SIZE}")
        if record_size < RECORD_SIZE:
            raise InputError(f"{path}: record_size", f"is {record_size}, smaller than {RECORD_SIZE}")
        self.rank = int(head["rank"])
        self.comm_size = int(head["comm_size"])
        self.node_id = int(head["node_id"])
        self.epoch = float(head["epoch"])
        self.dropped = int(head["dropped"])
        count = int(head["record_count"])
        table_at = int(head["file_table_offset"])
        if header_size + count * record_size > data_size:
            raise InputError(f"{path}: record_count", f"{count} records of {record_size} bytes do not fit in "
                             f"{data_size} bytes", "the trace was truncated; rerun the traced job")
        if table_at < header_size + count * record_size or table_at > data_size:
            raise InputError(f"{path}: file_table_offset", f"{table_at} is outside the file or overlaps records")
        self.count = count
        self._records_at = (header_size, record_size)
        self.table = self._file_table(path, table_at, int(head["file_count"]), data_size)

    def records(self) -> np.ndarray:
        """The records, read on demand so that one rank's buffer at a time is alive while merging."""
        at, record_size = self._records_at
        return np.fromfile(self.path, dtype=record_dtype(record_size), count=self.count, offset=at)

    @staticmethod
    def _file_table(path: Path, at: int, count: int, data_size: int) -> dict[int, str]:
        with path.open("rb") as f:
            f.seek(at)
            raw = f.read(data_size - at)
        table: dict[int, str] = {}
        pos = 0
        for i in range(count):
            if pos + 8 > len(raw):
                raise InputError(f"{path}: file table entry {i}", "is truncated", "rerun the traced job")
            fid, length = np.frombuffer(raw, dtype="<u4", count=2, offset=pos)
            pos += 8
            if pos + int(length) > len(raw):
                raise InputError(f"{path}: file table entry {i}", f"path of {int(length)} bytes is truncated")
            try:
                table[int(fid)] = raw[pos:pos + int(length)].decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}: file table entry {i}", "path is not UTF-8") from None
            pos += int(length)
        return table


def shim_trace_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("--trace", f"{path} does not exist", "pass a directory of .pfstrace files or one file")
    found = sorted(path.glob(f"*{SUFFIX}"))
    if not found:
        raise InputError("--trace", f"{path} holds no *{SUFFIX} files", "pass the shim's trace directory")
    return found


def read_shim_trace_dir(path: str | Path) -> Trace:
    """Read every rank file of a traced run (or one file) into one Trace; file ids merged by path."""
    ranks = [_RankFile(p) for p in shim_trace_files(path)]
    seen: dict[int, Path] = {}
    for rf in ranks:
        if rf.rank in seen:
            raise InputError(f"{rf.path}: rank", f"{rf.rank} also appears in {seen[rf.rank]}",
                             "keep the files of one run per directory")
        seen[rf.rank] = rf.path
    comm_sizes = {rf.comm_size for rf in ranks}
    if len(comm_sizes) > 1:
        raise InputError(f"{ranks[0].path.parent}: comm_size", f"differs between files ({sorted(comm_sizes)})",
                         "keep the files of one run per directory")
    epoch0 = min(rf.epoch for rf in ranks)
    files: dict[str, int] = {}
    # the merged columns are allocated once and filled rank by rank: peak memory is the trace plus one
    # rank's records, not the records, per-rank copies and their concatenation at once
    total = sum(rf.count for rf in ranks)
    cols: dict[str, np.ndarray] = {
            "rank": np.empty(total, np.int32), "op": np.empty(total, np.uint8), "offset": np.empty(total, np.int64),
            "size": np.empty(total, np.int64), "start": np.empty(total, np.float64),
            "end": np.empty(total, np.float64), "file_id": np.empty(total, np.int32),
            "collective": np.empty(total, bool)}
    at = 0
    for rf in ranks:
        rec = rf.records()
        local = np.full(max(rf.table, default=-1) + 1, -1, dtype=np.int64)
        for table_id, name in rf.table.items():
            local[table_id] = files.setdefault(name, len(files))
        fid = rec["file_id"].astype(np.int64)
        mapped = np.full(fid.shape, -1, dtype=np.int64)
        known = fid < local.size
        mapped[known] = local[fid[known]]
        if np.any(mapped < 0):
            i = int(np.argmax(mapped < 0))
            raise InputError(f"{rf.path}: record {i}: file_id", f"{int(fid[i])} is not in the file table")
        op = rec["op"]
        bad = (op != OP_READ) & (op != OP_WRITE)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InputError(f"{rf.path}: record {i}: op", f"is {int(op[i])}; must be 1 (read) or 2 (write)")
        shift = rf.epoch - epoch0
        part = slice(at, at + rec.shape[0])
        cols["rank"][part] = rf.rank
        cols["op"][part] = op
        cols["offset"][part] = rec["offset"]  # uint64 → int64 wraps as astype did
        cols["size"][part] = rec["size"]
        np.add(rec["start"], shift, out=cols["start"][part])
        np.add(rec["end"], shift, out=cols["end"][part])
        cols["file_id"][part] = mapped
        np.not_equal(rec["flags"] & REC_COLLECTIVE, 0, out=cols["collective"][part])
        at += rec.shape[0]
        del rec, fid, mapped
    max_rank = max(rf.rank for rf in ranks)
    node_keys = np.full(max_rank + 1, -1, dtype=np.int64)
    for rf in ranks:
        node_keys[rf.rank] = rf.node_id
    present = node_keys >= 0
    node_of_rank = np.full(max_rank + 1, -1, dtype=np.int32)
    _, dense = np.unique(node_keys[present], return_inverse=True)
    node_of_rank[present] = dense.reshape(-1)
    return Trace(rank=cols["rank"], op=cols["op"], offset=cols["offset"], size=cols["size"], start=cols["start"],
                 end=cols["end"], file_id=cols["file_id"], files=list(files), node_of_rank=node_of_rank,
                 collective=cols["collective"], nprocs=comm_sizes.pop(), dropped=sum(rf.dropped for rf in ranks))
