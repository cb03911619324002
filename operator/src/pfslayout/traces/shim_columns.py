"""A block of a rank file's raw shim records into every column of the merged trace, in one numba pass: the
kernel of the shim trace reader (``shim.read_shim_trace_dir``).

Imported only inside ``read_shim_trace_dir``: numba and llvmlite cost ~100 MB of memory, and the operator
process, which imports ``pfslayout.traces``, must not load them.

numpy's field views of a structured record array cost a strided copy per field, a temporary per
conversion (file ids to int64, the remapped ids, the collective flags) and Python calls per rank; this
kernel reads each record once, while it is in cache, and writes the columns directly.
"""

from __future__ import annotations

import numba
import numpy as np

# Bytes of a record the v1 reader uses (docs/trace-format.md); longer records carry later fields after them.
V1_RECORD = 40


@numba.njit(cache=True, nogil=True)
def _pack_v1(raw: np.ndarray, count: int, record_size: int) -> np.ndarray:
    """The first 40 bytes of each record, at a stride of 40. Only for a ``record_size`` that is not a
    multiple of 8: there the 8-byte fields of most records are unaligned, and ``fill_records`` reads
    fields through aligned typed views of the buffer."""
    out = np.empty(count * V1_RECORD, dtype=np.uint8)
    for i in range(count):
        src = i * record_size
        dst = i * V1_RECORD
        for b in range(V1_RECORD):
            out[dst + b] = raw[src + b]
    return out


@numba.njit(cache=True, nogil=True)
def _sparse_lookup(ids: np.ndarray, merged: np.ndarray, fid: np.int64) -> int:
    """The merged id of ``fid`` in a sparse table (``ids`` sorted), -1 when the table has no such id."""
    k = np.searchsorted(ids, fid)
    if k < ids.shape[0] and ids[k] == fid:
        return int(merged[k])
    return -1


@numba.njit(cache=True, nogil=True)
def fill_records(raw: np.ndarray, count: int, record_size: int, ids: np.ndarray, merged: np.ndarray,
                 shift: float, at: int, op: np.ndarray, offset: np.ndarray, size: np.ndarray, start: np.ndarray,
                 end: np.ndarray, file_id: np.ndarray, collective: np.ndarray) -> tuple[int, int]:
    """Copy ``count`` records from ``raw`` (uint8, records back to back from byte 0, ``record_size`` bytes
    each; its length a multiple of 8) into the columns from row ``at``: times plus ``shift`` (the rank's
    epoch offset), offset and size reinterpreted as int64 (as numpy's uint64 → int64 cast wraps), op, the
    rank's file id mapped to the merged id, and flag bit 0 (REC_COLLECTIVE) as ``collective``.

    File ids: with ``ids`` empty (a dense table), ``merged[fid]`` is the merged id, -1 where the table
    has no entry, and the last entry of ``merged`` is -1 so that any larger id maps to it; otherwise
    ``ids`` holds the table's ids sorted and ``merged`` the merged id of each.

    Returns (index of the first record whose file id is not in the table, or -1; index of the first record
    before it whose op is neither 1 (read) nor 2 (write), or -1), for the caller to raise the error the
    numpy reader raised (it checked every file id before any op). Bad records are written all the same.
    """
    if count == 0:
        return -1, -1
    if record_size % 8 != 0:
        raw = _pack_v1(raw, count, record_size)
        record_size = V1_RECORD
    rows = slice(at, at + count)
    args = (raw, count, ids, merged, shift, start[rows], end[rows], offset[rows], size[rows], file_id[rows],
            op[rows], collective[rows])
    # the shim's own stride as a constant: LLVM then turns the strided loads into wide loads and shuffles
    # (3.9 → 3.3 ms per 1 M records); any other stride takes the same code with a variable one
    if record_size == V1_RECORD:
        bad = _copy(np.uint64(V1_RECORD // 8), *args)
    else:
        bad = _copy(np.uint64(record_size // 8), *args)
    if not bad:
        return -1, -1
    bad_op = -1
    for i in range(count):  # a bad block: find the indices
        if file_id[at + i] < 0:
            return i, bad_op
        if op[at + i] != 1 and op[at + i] != 2 and bad_op < 0:
            bad_op = i
    return -1, bad_op


@numba.njit(cache=True, nogil=True)
def _copy(words: np.uint64, raw: np.ndarray, count: int, ids: np.ndarray, merged: np.ndarray, shift: float,
          start: np.ndarray, end: np.ndarray, offset: np.ndarray, size: np.ndarray, file_id: np.ndarray,
          op: np.ndarray, collective: np.ndarray) -> bool:
    """``fill_records`` for one block, the columns sliced to its rows; True if a file id or op is bad.

    Records are ``words`` 8-byte words apart, read through typed views of the buffer: with the stride a
    multiple of 8 (and the buffer 8-aligned) every field is aligned, one load each (assembling fields
    from bytes measured 2.3x slower). Indices are unsigned, so numba emits no negative-index wraparound
    per access. Two loops, the 8-byte fields and then the rest, measured faster than one (fewer
    store streams at a time); the kernel is bound by its stores to the columns."""
    f8 = raw.view(np.float64)
    i8 = raw.view(np.int64)
    u4 = raw.view(np.uint32)
    for i in range(count):
        w = np.uint64(i) * words
        start[i] = f8[w] + shift  # byte 0
        end[i] = f8[w + np.uint64(1)] + shift  # byte 8
        offset[i] = i8[w + np.uint64(2)]  # byte 16
        size[i] = i8[w + np.uint64(3)]  # byte 24
    last = np.uint64(merged.shape[0] - 1)
    sparse = ids.shape[0] > 0
    bad = False
    for i in range(count):
        w = np.uint64(i) * words
        b = w * np.uint64(8)
        fid = np.uint64(u4[w * np.uint64(2) + np.uint64(8)])  # byte 32: file_id
        # dense: no branch, as ids past the table read the final -1
        mapped = _sparse_lookup(ids, merged, np.int64(fid)) if sparse else merged[min(fid, last)]
        code = raw[b + np.uint64(36)]  # byte 36: op
        # one flag, no branch per record: a bad block is rescanned for the indices
        bad |= (mapped < 0) | ((code != 1) & (code != 2))
        file_id[i] = mapped
        op[i] = code
        collective[i] = (raw[b + np.uint64(37)] & 1) != 0  # byte 37: flags
    return bad
