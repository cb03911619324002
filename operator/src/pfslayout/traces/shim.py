"""The shim's binary trace (docs/trace-format.md, version 1): reader for a directory of per-rank files
and the reference writer the C side is checked against.

Records are read at the stride of the header's ``record_size`` (only the v1 fields at their fixed
offsets are used), so later versions that append record fields still read; likewise ``header_size``.
Headers and file tables are parsed with ``struct``; the records of each file go, block by block through
one reused buffer, straight into the merged columns (``shim_columns.fill_records``, numba, imported only
when a trace is read).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.model import Trace

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
# the reader parses headers and table entries with struct (a numpy call per field or entry costs ~1 µs)
_HEADER = struct.Struct("<8s4H4I2QdII")
assert _HEADER.size == HEADER_SIZE
_ENTRY = struct.Struct("<II")  # file table entry: file_id, path length
_FILE_ID = struct.Struct("<I")
# a table whose largest id is below this (or 4x its entries) maps ids through an array indexed by id
_DENSE_IDS = 1 << 16
_HUGE_PAGE = 2 << 20  # x86-64 and arm64 (4 KiB pages) transparent huge page
# records are read in blocks of about this size into one reused buffer, which stays in the CPU cache
_BLOCK_BYTES = 1 << 18


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


class _Table:
    """A parsed file table (id → path, in table order), shared by all ranks whose raw table bytes are
    identical (ranks that opened the same files in the same order), so it is parsed and mapped once."""

    __slots__ = ("ids", "merged", "names")

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.ids: np.ndarray | None = None
        self.merged: np.ndarray | None = None

    def mapping(self, files: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """``shim_columns.fill_records``'s (ids, merged): for a dense table (the shim numbers files 0, 1, …)
        no ids and the merged id per table id, -1 for an id without entry and one -1 past the largest;
        for a sparse one the sorted ids and the merged id of each. Paths new to ``files`` are added in
        table order, as the numpy reader did for each rank. Computed at the table's first use: a later
        rank with the same table finds its paths in ``files`` already, so its ids map the same way."""
        if self.ids is None or self.merged is None:
            merged = {table_id: files.setdefault(name, len(files)) for table_id, name in self.names.items()}
            top = max(merged, default=-1)
            if top < max(_DENSE_IDS, 4 * len(merged)):
                self.ids = np.zeros(0, dtype=np.int64)
                self.merged = np.full(top + 2, -1, dtype=np.int64)
                self.merged[list(merged)] = list(merged.values())
            else:  # a few huge ids: binary search rather than a table up to the largest
                self.ids = np.array(sorted(merged), dtype=np.int64)
                self.merged = np.array([merged[int(k)] for k in self.ids], dtype=np.int64)
        return self.ids, self.merged


class _Tables:
    """Parsed file tables by their raw bytes and entry count."""

    def __init__(self) -> None:
        self._by_raw: dict[tuple[int, bytes], _Table] = {}
        self._last: tuple[int, bytes, _Table] | None = None

    def get(self, path: Path, raw: bytes, count: int) -> _Table:
        # consecutive ranks usually have the same table: one comparison, without hashing the bytes
        if self._last is not None and self._last[0] == count and self._last[1] == raw:
            return self._last[2]
        table = self._by_raw.get((count, raw))
        if table is None:  # errors name this file: the first file with these bytes
            table = _Table(_parse_file_table(path, raw, count))
            self._by_raw[(count, raw)] = table
        self._last = (count, raw, table)
        return table


def _parse_file_table(path: Path, raw: bytes, count: int) -> dict[int, str]:
    table: dict[int, str] = {}
    pos = 0
    for i in range(count):
        if pos + 8 > len(raw):
            raise InputError(f"{path}: file table entry {i}", "is truncated", "rerun the traced job")
        fid, length = _ENTRY.unpack_from(raw, pos)
        pos += 8
        if pos + length > len(raw):
            raise InputError(f"{path}: file table entry {i}", f"path of {length} bytes is truncated")
        try:
            table[fid] = raw[pos:pos + length].decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}: file table entry {i}", "path is not UTF-8") from None
        pos += length
    return table


_MAX_RANKS = (1 << 31) - 1  # ranks are int32 in a Trace


class _RankFile:
    """One rank file's header fields and file table, checked; its records are read later, in blocks.
    With ``keep_open`` the file stays open until ``close`` (saves a second open of every file)."""

    def __init__(self, path: Path, tables: _Tables, keep_open: bool) -> None:
        self.path = path
        self._fd: int | None = None
        fd = os.open(path, os.O_RDONLY)
        try:
            data_size = os.fstat(fd).st_size
            if data_size < HEADER_SIZE:
                raise InputError(f"{path}: header", f"file is {data_size} bytes, shorter than the 64-byte header",
                                 "the trace was truncated; rerun the traced job")
            fields: tuple[bytes, int, int, int, int, int, int, int, int, int, int, float, int, int] = (
                _HEADER.unpack(_pread(fd, HEADER_SIZE, 0)))
            (magic, version, header_size, record_size, _, rank, comm_size, node_id, _, count, table_at, epoch,
             file_count, dropped) = fields
            magic = magic.rstrip(b"\0")  # as numpy's S8 field showed it
            if magic != MAGIC:
                raise InputError(f"{path}: magic", f"is {magic!r}, not {MAGIC!r}",
                                 "pass a directory of .pfstrace files written by libpfsshim")
            if version != VERSION:
                raise InputError(f"{path}: version", f"is {version}; this reader knows version {VERSION}",
                                 "upgrade pfslayout to read traces from a newer shim")
            if header_size < HEADER_SIZE:
                raise InputError(f"{path}: header_size", f"is {header_size}, smaller than {HEADER_SIZE}")
            # a rank is below comm_size, and both fit the int32 rank column (a flipped high byte made an
            # OverflowError of the merge; found by generated corruption, tests/unit/test_trace_shim.py)
            if not 0 < comm_size <= _MAX_RANKS:
                raise InputError(f"{path}: comm_size", f"is {comm_size}; must be 1 to {_MAX_RANKS}",
                                 "the trace is corrupt; rerun the traced job")
            if rank >= comm_size:
                raise InputError(f"{path}: rank", f"is {rank}, not below comm_size {comm_size}",
                                 "the trace is corrupt; rerun the traced job")
            if record_size < RECORD_SIZE:
                raise InputError(f"{path}: record_size", f"is {record_size}, smaller than {RECORD_SIZE}")
            if header_size + count * record_size > data_size:
                raise InputError(f"{path}: record_count", f"{count} records of {record_size} bytes do not fit in "
                                 f"{data_size} bytes", "the trace was truncated; rerun the traced job")
            if table_at < header_size + count * record_size or table_at > data_size:
                raise InputError(f"{path}: file_table_offset", f"{table_at} is outside the file or overlaps records")
            self.table = tables.get(path, _pread(fd, data_size - table_at, table_at), file_count)
            if keep_open:
                self._fd, fd = fd, -1
        finally:
            if fd >= 0:
                os.close(fd)
        self.version = version
        self.rank = rank
        self.comm_size = comm_size
        self.node_id = node_id
        self.epoch = epoch
        self.dropped = dropped
        self.count = count
        self.header_size = header_size
        self.record_size = record_size

    def open(self) -> int:
        """The file's descriptor (the kept one, else a new one), until ``close``."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _files_to_keep_open() -> int:
    """How many rank files may stay open between the two passes: a quarter of the descriptor limit (the
    rest are opened again for their records)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return (1 << 16) if soft == resource.RLIM_INFINITY else max(0, soft // 4)


def _pread(fd: int, size: int, at: int) -> bytes:
    """``size`` bytes from ``at`` (fewer only at the end of the file)."""
    data = os.pread(fd, size, at)
    while len(data) < size:  # a short read before the end of the file: rare (or > 2 GiB at once)
        more = os.pread(fd, size - len(data), at + len(data))
        if not more:
            break
        data += more
    return data


def shim_trace_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("--trace", f"{path} does not exist", "pass a directory of .pfstrace files or one file")
    # children of one directory: their Path order (POSIX) is their name order, and names compare ~8x faster
    found = sorted(path.glob(f"*{SUFFIX}"), key=lambda p: p.name)
    if not found:
        raise InputError("--trace", f"{path} holds no *{SUFFIX} files", "pass the shim's trace directory")
    return found


def read_shim_trace_dir(path: str | Path) -> Trace:
    """Read every rank file of a traced run (or one file) into one Trace; file ids merged by path.

    Two passes, as the errors' order requires: every file's header and file table first (all checked
    before any record is read; the record total sizes the columns), then each file's records, block by
    block through one reused buffer, copied into the preallocated columns by a numba kernel
    (``shim_columns.fill_records``). Peak memory is the columns plus one block and the file tables.
    POSIX only (``os.pread``/``os.preadv``).
    """
    tables = _Tables()
    ranks: list[_RankFile] = []
    try:
        paths = shim_trace_files(path)
        keep = _files_to_keep_open()
        for p in paths:
            ranks.append(_RankFile(p, tables, keep_open=len(ranks) < keep))
        return _merge(ranks)
    finally:
        for rf in ranks:
            rf.close()


def _merge(ranks: list[_RankFile]) -> Trace:
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
    # Imported here: numba and llvmlite cost ~100 MB, and the operator process imports this module.
    from pfslayout.traces.shim_columns import fill_records

    epoch0 = min(rf.epoch for rf in ranks)
    files: dict[str, int] = {}
    total = sum(rf.count for rf in ranks)
    start, end, offset, size, rank, file_id, op, collective = _columns(
        total, (np.float64, np.float64, np.int64, np.int64, np.int32, np.int32, np.uint8, np.bool_))
    # the block buffer: whole records, a multiple of 8 bytes (the kernel views it as 8-byte words)
    block = max([_BLOCK_BYTES] + [rf.record_size for rf in ranks])
    buf = np.empty(-(-block // 8) * 8, dtype=np.uint8)
    at = 0
    for rf in ranks:
        ids, merged = rf.table.mapping(files)
        shift = rf.epoch - epoch0
        per_block = max(1, _BLOCK_BYTES // rf.record_size)
        bad_op = bad_code = -1
        if rf.count:
            fd = rf.open()
            try:
                for first in range(0, rf.count, per_block):
                    n = min(per_block, rf.count - first)
                    _read_records(fd, buf, n * rf.record_size, rf.header_size + first * rf.record_size, rf)
                    bad_id, bad = fill_records(buf, n, rf.record_size, ids, merged, shift, at + first, op, offset,
                                               size, start, end, file_id, collective)
                    if bad_id >= 0:
                        fid = _FILE_ID.unpack_from(buf.data, bad_id * rf.record_size + 32)[0]
                        raise InputError(f"{rf.path}: record {first + bad_id}: file_id",
                                         f"{fid} is not in the file table")
                    if bad >= 0 and bad_op < 0:  # reported once no later block has a bad file id
                        bad_op = first + bad
                        bad_code = int(buf[bad * rf.record_size + 36])
            finally:
                rf.close()
        if bad_op >= 0:
            raise InputError(f"{rf.path}: record {bad_op}: op", f"is {bad_code}; must be 1 (read) or 2 (write)")
        rank[at:at + rf.count] = rf.rank
        at += rf.count
    max_rank = max(rf.rank for rf in ranks)
    node_keys = np.full(max_rank + 1, -1, dtype=np.int64)
    for rf in ranks:
        node_keys[rf.rank] = rf.node_id
    present = node_keys >= 0
    node_of_rank = np.full(max_rank + 1, -1, dtype=np.int32)
    _, dense = np.unique(node_keys[present], return_inverse=True)
    node_of_rank[present] = dense.reshape(-1)
    return Trace(rank=rank, op=op, offset=offset, size=size, start=start, end=end, file_id=file_id,
                 files=list(files), node_of_rank=node_of_rank, collective=collective, nprocs=comm_sizes.pop(),
                 dropped=sum(rf.dropped for rf in ranks))


def _columns(n: int, dtypes: tuple[type[np.generic], ...]) -> list[np.ndarray]:
    """Uninitialised columns of ``n`` rows, back to back (64-byte aligned) in one buffer that starts on a
    2 MiB boundary. The reader writes every byte of them once, and the kernel's zero-filled page per first
    write is most of that cost: numpy asks for transparent huge pages for buffers of 4 MiB and more, but
    only whole aligned 2 MiB ranges get them, and a heap buffer rarely starts on one, so separate columns
    take ~4,600 faults of 4 KiB per 1 M records (~10 ms); aligned in one buffer, ~20 faults of 2 MiB (and
    the last huge page, partly past the columns, is the only memory beyond them: < 2 MiB). The columns
    are views of that buffer, which is freed with the last of them (a Trace keeps all of them anyway)."""
    sizes = [-(-n * np.dtype(t).itemsize // 64) * 64 for t in dtypes]
    total = sum(sizes)
    if total < _HUGE_PAGE:
        buf, at = np.empty(total, np.uint8), 0
    else:
        buf = np.empty(-(-total // _HUGE_PAGE) * _HUGE_PAGE + _HUGE_PAGE, np.uint8)
        at = -buf.ctypes.data % _HUGE_PAGE
    cols = []
    for t, nbytes in zip(dtypes, sizes):
        cols.append(buf[at:at + n * np.dtype(t).itemsize].view(t))
        at += nbytes
    return cols


def _read_records(fd: int, buf: np.ndarray, nbytes: int, at: int, rf: _RankFile) -> None:
    """``nbytes`` of ``fd`` from offset ``at`` into ``buf``; the header said they are there, so a shorter
    file was truncated since it was checked. Positioned reads: no seek per file (a system call costs
    ~2.5 µs in the VMs measured, and a run has a file per rank)."""
    view = buf.data[:nbytes]
    got = 0
    while got < nbytes:
        n = os.preadv(fd, [view[got:]], at + got)
        if not n:
            raise InputError(f"{rf.path}: record_count", f"{rf.count} records of {rf.record_size} bytes do not "
                             f"fit in {os.fstat(fd).st_size} bytes", "the trace was truncated; rerun the traced job")
        got += n
