"""Grouping helpers for the fast derive path (numba): dense ids of (a, b) pairs, per-group modes and the
sequential flags, each in one or two linear passes instead of the sorts (``np.unique``, ``lexsort``)
the reference uses. Results are identical: ids are only labels, and modes/flags follow the same rules.
"""

from __future__ import annotations

import numba
import numpy as np

from pfslayout.traces.derive_kernels.unchecked_index import ix

_EMPTY = np.int64(-1)
_DIRECT_PER_ROW = 4  # a dense a × b table is used while it is at most this many entries per row (+ 2^20)


@numba.njit(inline="always")
def _hash(a: np.int64, b: np.int64, mask: int) -> int:
    h = (a * np.int64(0x9E3779B97F4A7C15)) ^ (b * np.int64(0xC2B2AE3D27D4EB4F))
    return int((h ^ (h >> 29)) & mask)


@numba.njit(cache=True, nogil=True)
def _grow(keys_a: np.ndarray, keys_b: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cap = keys_a.shape[0] * 2
    mask = cap - 1
    na = np.full(cap, _EMPTY, dtype=np.int64)
    nb = np.zeros(cap, dtype=np.int64)
    ni = np.zeros(cap, dtype=np.int32)
    for slot in range(keys_a.shape[0]):
        if keys_a[slot] != _EMPTY:
            h = _hash(keys_a[slot], keys_b[slot], mask)
            while na[h] != _EMPTY:
                h = (h + 1) & mask
            na[h] = keys_a[slot]
            nb[h] = keys_b[slot]
            ni[h] = ids[slot]
    return na, nb, ni


@numba.njit(cache=True, nogil=True)
def pair_ids(a: np.ndarray, b: np.ndarray, b_width: int) -> tuple[np.ndarray, int]:
    """Dense id (0..count-1) of each row's (a, b) pair, a ≥ 0 and 0 ≤ b < b_width: a direct table when
    a × b_width is small, else an open-addressing hash table that grows with the distinct pairs."""
    n = a.shape[0]
    ids = np.empty(n, dtype=np.int32)
    a_max = 0
    for i in range(n):
        if a[i] > a_max:
            a_max = a[i]
    if (a_max + 1) * b_width <= _DIRECT_PER_ROW * n + (1 << 20):
        table = np.full((a_max + 1) * b_width, -1, dtype=np.int32)
        count = 0
        for i in range(n):
            key = ix(np.int64(a[i]) * b_width + b[i])
            v = table[key]
            if v < 0:
                v = count
                table[key] = v
                count += 1
            ids[i] = v
        return ids, count
    keys_a = np.full(1024, _EMPTY, dtype=np.int64)
    keys_b = np.zeros(1024, dtype=np.int64)
    vals = np.zeros(1024, dtype=np.int32)
    count = 0
    for i in range(n):
        ka = np.int64(a[i])
        kb = np.int64(b[i])
        mask = keys_a.shape[0] - 1
        h = _hash(ka, kb, mask)
        while keys_a[h] != _EMPTY and (keys_a[h] != ka or keys_b[h] != kb):
            h = (h + 1) & mask
        if keys_a[h] == _EMPTY:
            keys_a[h] = ka
            keys_b[h] = kb
            vals[h] = count
            ids[i] = count
            count += 1
            if 2 * count > keys_a.shape[0]:
                keys_a, keys_b, vals = _grow(keys_a, keys_b, vals)
        else:
            ids[i] = vals[h]
    return ids, count


@numba.njit(cache=True, nogil=True)
def _group_modes_hashed(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    """``group_modes`` for any number of distinct values: counts per (group, value) in a hash table."""
    keys_a = np.full(1024, _EMPTY, dtype=np.int64)
    keys_b = np.zeros(1024, dtype=np.int64)
    counts = np.zeros(1024, dtype=np.int32)
    used = 0
    for i in range(group.shape[0]):
        ka = np.int64(group[i])
        kb = np.int64(value[i])
        mask = keys_a.shape[0] - 1
        h = _hash(ka, kb, mask)
        while keys_a[h] != _EMPTY and (keys_a[h] != ka or keys_b[h] != kb):
            h = (h + 1) & mask
        if keys_a[h] == _EMPTY:
            keys_a[h] = ka
            keys_b[h] = kb
            counts[h] = 1
            used += 1
            if 2 * used > keys_a.shape[0]:
                keys_a, keys_b, counts = _grow(keys_a, keys_b, counts)
        else:
            counts[h] += 1
    out = np.zeros(n_groups, dtype=np.int64)
    best = np.zeros(n_groups, dtype=np.int64)
    for h in range(keys_a.shape[0]):
        g = keys_a[h]
        if g == _EMPTY:
            continue
        c = counts[h]
        v = keys_b[h]
        if c > best[g] or (c == best[g] and v > out[g]):
            best[g] = c
            out[g] = v
    return out


_FEW = 8  # distinct values group_modes tells apart by comparison; more take the hash table
_SEEN_BITS = 6  # group_modes' direct-mapped cache of the values seen: 64 entries


@numba.njit(cache=True, nogil=True)
def group_modes(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group (0..n_groups-1) its most common value, ties to the larger value; 0 for an empty group.

    Traces use a handful of request sizes: while there are at most ``_FEW`` distinct values, each is
    counted in a dense group × value table. A value's column is found in a small direct-mapped cache
    (value → column, by a multiplicative hash): a hit, predictable, for nearly every request; a miss
    compares against all values seen at once (selects, no branch to mispredict) and fills the entry (2.7 ->
    0.9 ms per 1 M requests, comparing every time). A further value hands the whole count to the hash
    table."""
    if n_groups * _FEW > max(group.shape[0], 1 << 16):  # the dense table would outgrow the trace (4 B a request)
        return _group_modes_hashed(group, value, n_groups)
    n_values = 0
    values = np.zeros(_FEW, dtype=np.int64)
    seen_value = np.zeros(1 << _SEEN_BITS, dtype=np.int64)
    seen_vid = np.full(1 << _SEEN_BITS, -1, dtype=np.int64)  # -1: an empty entry (any int64 is a value)
    counts = np.zeros(n_groups * _FEW, dtype=np.int32)
    for i in range(group.shape[0]):
        v = np.int64(value[i])
        h = (np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - _SEEN_BITS)  # unsigned: no wraparound
        vid = seen_vid[h]
        if (seen_value[h] != v) | (vid < 0):
            vid = -1
            for k in range(_FEW):
                vid = k if (k < n_values) & (values[k] == v) else vid
            if vid < 0:
                if n_values == _FEW:
                    return _group_modes_hashed(group, value, n_groups)
                values[n_values] = v
                vid = n_values
                n_values += 1
            seen_value[h] = v
            seen_vid[h] = vid
        counts[np.int64(group[i]) * _FEW + vid] += 1
    out = np.zeros(n_groups, dtype=np.int64)
    for g in range(n_groups):
        best = 0
        for k in range(n_values):
            c = counts[g * _FEW + k]
            if c > best or (c == best and c > 0 and values[k] > out[g]):
                best = c
                out[g] = values[k]
    return out


@numba.njit(cache=True, nogil=True)
def sequential_flags(order: np.ndarray, pair: np.ndarray, n_pairs: int, offset: np.ndarray,
                     size: np.ndarray) -> np.ndarray:
    """Visiting requests in ``order`` (by start, ties by index): sequential iff the offset continues the
    same (file, rank) pair's previous request, or is 0 for the pair's first."""
    seen = np.zeros(n_pairs, dtype=np.bool_)
    last_end = np.zeros(n_pairs, dtype=np.int64)
    out = np.empty(order.shape[0], dtype=np.bool_)
    for j in range(order.shape[0]):
        i = order[j]
        pr = pair[i]
        off = np.int64(offset[i])
        out[i] = off == last_end[pr] if seen[pr] else off == 0
        seen[pr] = True
        last_end[pr] = off + np.int64(size[i])
    return out


@numba.njit(cache=True, nogil=True)
def pair_members(pair: np.ndarray, a: np.ndarray, b: np.ndarray, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair id's (a, b), from the rows ``pair_ids`` labelled: per-pair tables instead of per-row columns."""
    out_a = np.empty(n_pairs, dtype=np.int32)
    out_b = np.empty(n_pairs, dtype=np.int32)
    for i in range(pair.shape[0]):
        out_a[ix(pair[i])] = a[i]
        out_b[ix(pair[i])] = b[i]
    return out_a, out_b


@numba.njit(cache=True, nogil=True)
def sequential_in_index_order(pair: np.ndarray, n_pairs: int, start: np.ndarray, offset: np.ndarray,
                              size: np.ndarray) -> tuple[np.ndarray, bool]:
    """``sequential_flags`` visiting requests in index order, and whether that was the start order (ties by
    index) within every (file, rank) pair — only then are the flags the rule's; the caller falls back."""
    seen = np.zeros(n_pairs, dtype=np.bool_)
    last_end = np.zeros(n_pairs, dtype=np.int64)
    last_start = np.zeros(n_pairs, dtype=np.float64)
    out = np.empty(pair.shape[0], dtype=np.bool_)
    for i in range(pair.shape[0]):
        pr = ix(pair[i])
        off = np.int64(offset[i])
        if seen[pr]:
            if start[i] < last_start[pr]:
                return out, False
            out[i] = off == last_end[pr]
        else:
            out[i] = off == 0
            seen[pr] = True
        last_start[pr] = start[i]
        last_end[pr] = off + np.int64(size[i])
    return out, True


@numba.njit(cache=True, nogil=True)
def scan(start: np.ndarray, end: np.ndarray, rank: np.ndarray,
         file_id: np.ndarray) -> tuple[bool, np.int64, np.int64, np.int64]:
    """(all times finite, min rank, max rank, min file id) in one pass (n > 0): the fast path's entry checks
    and table sizes, where numpy takes a pass and a boolean temporary per check."""
    finite = True
    r_lo = r_hi = np.int64(rank[0])
    f_lo = np.int64(file_id[0])
    for i in range(start.shape[0]):
        finite &= np.isfinite(start[i]) & np.isfinite(end[i])
        r = np.int64(rank[i])
        r_lo = min(r_lo, r)
        r_hi = max(r_hi, r)
        f_lo = min(f_lo, np.int64(file_id[i]))
    return finite, r_lo, r_hi, f_lo


@numba.njit(cache=True, nogil=True)
def present(values: np.ndarray, width: int) -> np.ndarray:
    """The distinct values (0 <= v < width), ascending: a presence table, not a sort or a count per value."""
    seen = np.zeros(width, dtype=np.bool_)
    for i in range(values.shape[0]):
        seen[ix(values[i])] = True
    return np.flatnonzero(seen)


@numba.njit(cache=True, nogil=True)
def take(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``table[index]`` (int32) for indices 0 <= i < len(table) (no negative wraparound): numpy widens an int32
    index to an int64 temporary first."""
    out = np.empty(index.shape[0], dtype=np.int32)
    for i in range(index.shape[0]):
        out[i] = table[ix(index[i])]
    return out
