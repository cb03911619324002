"""Per-target aggregates of a derived trace for ``plan_trace``'s fast path (numba), in linear passes over
the requests instead of an argsort by target and fancy-indexed copies of every column per target.

Imported only inside ``plan_trace``: numba and llvmlite cost ~100 MB of memory, and the operator process
imports the planner without ever planning a trace.

What the planner needs of a target is a function of these aggregates alone:

* per (target, p, m, random) group: the request count and the byte sum. The byte sum is accumulated in
  float64 in request order, the order ``np.bincount(key, weights=size)`` adds in on the target's requests,
  so every group's sum is bit-identical to ``costmodel.fast.group_requests`` whatever the sizes;
* per (target, size, read, collective): the request count. Integer counts, so merging them in any order
  is exact: each target's reads, collective records, int64 byte total (Σ count·size wraps modulo 2^64 like
  numpy's int64 sum) and most common size (ties: the larger) follow from them;
* per file: the first rank seen and whether another rank touches it (shared or file-per-process, and the
  file count, need no more than "one rank or several").

A group's slot is ``(p · width + m) · 2 + random``: ordering slots orders groups by (p, m, random), the
order ``group_requests`` returns them in. Two ways to fill the tables, same results:

* ``aggregate_dense`` — one pass, the groups in a targets × slots table indexed directly (few targets
  and small p, m ranges: the default per-directory plan of a typical trace);
* ``aggregate_sorted`` — a counting sort of the requests by target (one int32 array of N), then one
  target at a time, its groups in a slot-indexed table (or a hash table when there are too many slots)
  cleared between targets: memory stays that of one target's tables however many targets (per-file
  plans). The order is also what per-request data of a target (hybrid replicas, collective calls) is
  later gathered with.

Sizes are keyed ``size · 4 · targets + target · 4 + read · 2 + collective`` (``targets`` = 1 per target in
the sorted pass). The caller checks keys stay below 2^62.

The loops avoid branches on per-request data where they can: the synthetic traces draw each request's
file, size and operation at random, and a mispredicted branch per request costs as much as the rest of the
request's work. Tables and columns are indexed with unsigned integers where the index is known
non-negative (ids, slots, hash positions, request indices), which spares numba's negative-index
wraparound on each access; hot loops run from 0 over slices for the same reason. Arrays are never
reassigned inside a hot loop (numba would reference-count them on every iteration): a pass stops when a
hash table is half full, and its caller grows the table and resumes.
"""

from __future__ import annotations

import numba
import numpy as np

_EMPTY = -1
_RADIX_BITS = 11  # digits of the LSD radix sort of table keys: 2048 buckets, stays in L1
DENSE_LIMIT = 1 << 18  # targets × slots of aggregate_dense's table (16 B each: 4 MiB)
SLOT_LIMIT = 1 << 18  # slots of aggregate_sorted's per-target table (16 B each) before it hashes them
_U1 = np.uint64(1)
_U2 = np.uint64(2)


@numba.njit(inline="always")
def _hash(key: int | np.integer, mask: np.uint64) -> np.uint64:
    """Position of a non-negative key in an open-addressing table of mask + 1 entries (a power of two)."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(32)
    return h & mask


@numba.njit(cache=True, nogil=True)
def trace_bounds(p: np.ndarray, m: np.ndarray, size: np.ndarray, file_id: np.ndarray,
                 rank: np.ndarray) -> tuple[np.int64, np.int64, np.int64, np.int64, bool, np.int64, np.int64,
                                            np.int64, np.int64, np.int64]:
    """(min p, max p, min m, max m, any m > p, min size, max size, min file id, max file id, min rank):
    every check and table size the fast path needs, in one pass instead of one numpy pass (and a boolean
    temporary) per check. Needs at least one request."""
    pmin = pmax = np.int64(p[0])
    mmin = mmax = np.int64(m[0])
    smin = smax = np.int64(size[0])
    fmin = fmax = np.int64(file_id[0])
    rmin = np.int64(rank[0])
    m_over_p = False
    for i in range(p.shape[0]):
        pi = np.int64(p[i])
        mi = np.int64(m[i])
        pmin = min(pmin, pi)
        pmax = max(pmax, pi)
        mmin = min(mmin, mi)
        mmax = max(mmax, mi)
        m_over_p |= bool(mi > pi)
        si = np.int64(size[i])
        smin = min(smin, si)
        smax = max(smax, si)
        f = np.int64(file_id[i])
        fmin = min(fmin, f)
        fmax = max(fmax, f)
        rmin = min(rmin, np.int64(rank[i]))
    return pmin, pmax, mmin, mmax, m_over_p, smin, smax, fmin, fmax, rmin


@numba.njit(cache=True, nogil=True)
def _grow(keys: np.ndarray, val: np.ndarray, stride: int, pos: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The table rehashed into twice the entries (``stride`` values each), with the positions of its keys
    (room for half the entries, the most a table holds before it grows)."""
    cap = keys.shape[0] * 2
    mask = np.uint64(cap - 1)
    nk = np.full(cap, _EMPTY, dtype=np.int64)
    nv = np.zeros(stride * cap, dtype=val.dtype)
    npos = np.empty(cap // 2 + 1, dtype=pos.dtype)
    used = 0
    for j in range(keys.shape[0]):
        k = keys[j]
        if k != _EMPTY:
            h = _hash(k, mask)
            while nk[h] != _EMPTY:
                h = (h + _U1) & mask
            nk[h] = k
            for c in range(stride):
                nv[np.int64(h) * stride + c] = val[stride * j + c]
            npos[used] = h
            used += 1
    return nk, nv, npos


@numba.njit(cache=True, nogil=True)
def _key_order(keys: np.ndarray) -> np.ndarray:
    """Indices sorting distinct non-negative int64 keys: an insertion sort for a few, else an LSD radix
    sort, O(n + buckets) per digit (8-bit digits below 4096 keys: the sorted pass sorts each target's
    groups and sizes apart, so the per-call cost counts), where numba's quicksort is O(n log n) with a
    larger constant."""
    n = keys.shape[0]
    order = np.arange(n)
    if n <= 16:
        for j in range(1, n):
            o = order[j]
            k = j
            while k > 0 and keys[order[k - 1]] > keys[o]:
                order[k] = order[k - 1]
                k -= 1
            order[k] = o
        return order
    tmp = np.empty(n, dtype=np.int64)
    top = keys.max()
    bits = 8 if n < 4096 else _RADIX_BITS
    digits = 1 << bits
    start = np.empty(digits + 1, dtype=np.int64)
    shift = 0
    while (top >> shift) > 0:
        start[:] = 0
        for j in range(n):
            start[((keys[order[j]] >> shift) & (digits - 1)) + 1] += 1
        for d in range(digits):
            start[d + 1] += start[d]
        for j in range(n):
            d = (keys[order[j]] >> shift) & (digits - 1)
            tmp[start[d]] = order[j]
            start[d] += 1
        order, tmp = tmp, order
        shift += bits
    return order


@numba.njit(cache=True, nogil=True)
def _size_summary(z_key: np.ndarray, z_cnt: np.ndarray, pos: np.ndarray, n_targets: int, t_base: int,
                  reads: np.ndarray, nbytes: np.ndarray, ncoll: np.ndarray, dominant: np.ndarray) -> None:
    """Per target (``t_base + (key >> 2) % n_targets``) from the size table's entries at ``pos``: reads,
    collective records, the int64 byte total and the most common size. Sorted by key, the entries of one
    (size, target) are adjacent (key >> 2 = size · n_targets + target), so their counts merge."""
    keys = z_key[pos]
    order = _key_order(keys)
    best = np.zeros(reads.shape[0], dtype=np.int64)
    j = 0
    while j < order.shape[0]:
        pair = keys[order[j]] >> 2
        t = t_base + pair % n_targets
        s = pair // n_targets
        c = 0
        while j < order.shape[0] and keys[order[j]] >> 2 == pair:
            k = keys[order[j]]
            n = z_cnt[pos[order[j]]]
            c += n
            reads[t] += n * ((k >> 1) & 1)
            ncoll[t] += n * (k & 1)
            j += 1
        nbytes[t] += c * s  # int64, wrapping like numpy's sum
        if c > best[t] or (c == best[t] and s > dominant[t]):
            best[t] = c
            dominant[t] = s


@numba.njit(cache=True, nogil=True)
def _pass_dense(file_id: np.ndarray, p: np.ndarray, m: np.ndarray, sequential: np.ndarray, size: np.ndarray,
                op: np.ndarray, read_op: int, collective: np.ndarray, has_collective: bool, rank: np.ndarray,
                target_of_file: np.ndarray, width: int, n_slots: int, size_mult: int, d_val: np.ndarray,
                z_key: np.ndarray, z_cnt: np.ndarray, z_pos: np.ndarray, z_used: int, track_ranks: bool,
                last_rank: np.ndarray, first_rank: np.ndarray, multi_rank: np.ndarray) -> tuple[int, int]:
    """The requests into the dense group table and the size table, to the end or until the size table is
    half full; returns how many requests were done and the size table's fill."""
    z_mask = np.uint64(z_key.shape[0] - 1)
    for i in range(file_id.shape[0]):
        f = np.uint64(file_id[i])
        t = np.int64(target_of_file[f])
        s = np.int64(size[i])
        key = np.uint64(t * n_slots + (np.int64(p[i]) * width + np.int64(m[i])) * 2 + (1 - np.int64(sequential[i])))
        # count and byte sum side by side, one cache line per update; the count is a float64 here (exact
        # below 2^53) and the byte sum grows in request order
        d_val[_U2 * key] += 1.0
        d_val[_U2 * key + _U1] += np.float64(s)
        zk = s * size_mult + t * 4 + np.int64(op[i] == read_op) * 2
        if has_collective:
            zk += np.int64(collective[i])
        # the probe is written out here and in _pass_target on purpose: as a numba helper (inline or not)
        # the dense pass measured 2-4x slower (7.3 -> 13-28 ms per 1 M requests)
        h = _hash(zk, z_mask)
        while z_key[h] != zk and z_key[h] != _EMPTY:
            h = (h + _U1) & z_mask
        if z_key[h] == _EMPTY:
            z_key[h] = zk
            z_pos[z_used] = h
            z_used += 1
        z_cnt[h] += 1
        if track_ranks:
            r = np.int64(rank[i])
            # a file seen with the same rank as last time needs no check: in a trace grouped by rank (the
            # shim writes one file per rank) this branch is almost never taken, so well predicted
            if last_rank[f] != r:
                last_rank[f] = r
                if first_rank[f] < 0:
                    first_rank[f] = r
                elif first_rank[f] != r:
                    multi_rank[f] = True
        if 2 * z_used > z_key.shape[0]:
            return i + 1, z_used
    return file_id.shape[0], z_used


@numba.njit(cache=True, nogil=True)
def aggregate_dense(file_id: np.ndarray, p: np.ndarray, m: np.ndarray, sequential: np.ndarray, size: np.ndarray,
                    op: np.ndarray, read_op: int, collective: np.ndarray, has_collective: bool, rank: np.ndarray,
                    target_of_file: np.ndarray, n_targets: int, width: int, n_slots: int, track_ranks: bool,
                    first_rank: np.ndarray, multi_rank: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                               np.ndarray]:
    """One pass over the requests with a targets × n_slots group table. Returns per target its reads,
    int64 byte total, collective records and most common size, then the groups sorted by (target, p, m,
    random): target, slot, count (int64), byte sum (float64). ``track_ranks`` fills ``first_rank`` (-1:
    no request) and ``multi_rank`` per file."""
    nt = n_targets
    d_val = np.zeros(2 * nt * n_slots, dtype=np.float64)
    z_key = np.full(256, _EMPTY, dtype=np.int64)
    z_cnt = np.zeros(256, dtype=np.int64)
    z_pos = np.empty(129, dtype=np.uint64)
    last_rank = np.full(first_rank.shape[0] if track_ranks else 0, _EMPTY, dtype=np.int64)
    z_used = 0
    i = 0
    n = file_id.shape[0]
    while i < n:
        coll = collective[i:] if has_collective else collective  # read only with has_collective
        done, z_used = _pass_dense(file_id[i:], p[i:], m[i:], sequential[i:], size[i:], op[i:], read_op, coll,
                                   has_collective, rank[i:], target_of_file, width, n_slots, 4 * nt, d_val, z_key,
                                   z_cnt, z_pos, z_used, track_ranks, last_rank, first_rank, multi_rank)
        i += done
        if 2 * z_used > z_key.shape[0]:
            z_key, z_cnt, z_pos = _grow(z_key, z_cnt, 1, z_pos)

    reads = np.zeros(nt, dtype=np.int64)
    nbytes = np.zeros(nt, dtype=np.int64)
    ncoll = np.zeros(nt, dtype=np.int64)
    dominant = np.zeros(nt, dtype=np.int64)
    _size_summary(z_key, z_cnt, z_pos[:z_used], nt, 0, reads, nbytes, ncoll, dominant)

    n_groups = 0
    for k in range(nt * n_slots):
        n_groups += d_val[2 * k] > 0
    g_t = np.empty(n_groups, dtype=np.int64)
    g_slot = np.empty(n_groups, dtype=np.int64)
    g_cnt = np.empty(n_groups, dtype=np.int64)
    g_byt = np.empty(n_groups, dtype=np.float64)
    j = 0
    for k in range(nt * n_slots):  # in (target, slot) order already
        if d_val[2 * k] > 0:
            g_t[j] = k // n_slots
            g_slot[j] = k % n_slots
            g_cnt[j] = np.int64(d_val[2 * k])
            g_byt[j] = d_val[2 * k + 1]
            j += 1
    return reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt


@numba.njit(cache=True, nogil=True)
def order_by_target(file_id: np.ndarray, target_of_file: np.ndarray, n_targets: int, out: np.ndarray) -> np.ndarray:
    """A stable counting sort of the requests by target into ``out`` (int32 while N fits): target t's
    requests are ``out[start[t]:start[t + 1]]``, in index order. Returns ``start``."""
    start = np.zeros(n_targets + 1, dtype=np.int64)
    for i in range(file_id.shape[0]):
        start[np.uint64(target_of_file[np.uint64(file_id[i])]) + _U1] += 1
    for t in range(n_targets):
        start[t + 1] += start[t]
    pos = start[:-1].copy()
    for i in range(file_id.shape[0]):
        tu = np.uint64(target_of_file[np.uint64(file_id[i])])
        out[pos[tu]] = i
        pos[tu] += 1
    return start


@numba.njit(cache=True, nogil=True)
def _pass_target(idx: np.ndarray, file_id: np.ndarray, p: np.ndarray, m: np.ndarray, sequential: np.ndarray,
                 size: np.ndarray, op: np.ndarray, read_op: int, collective: np.ndarray, has_collective: bool,
                 rank: np.ndarray, width: int, slot_dense: bool, s_val: np.ndarray, s_key: np.ndarray,
                 s_pos: np.ndarray, s_used: int, z_key: np.ndarray, z_cnt: np.ndarray, z_pos: np.ndarray,
                 z_used: int, track_ranks: bool, last_rank: np.ndarray, first_rank: np.ndarray,
                 multi_rank: np.ndarray) -> tuple[int, int, int]:
    """One target's requests ``idx`` (ascending) into its slot table (dense: indexed by slot; else hashed)
    and size table, to the end or until a hash table is half full; returns how many were done and the
    tables' fill. ``s_pos``/``z_pos`` collect the entries used, for the read-out and the reset."""
    s_mask = np.uint64(s_key.shape[0] - 1)
    z_mask = np.uint64(z_key.shape[0] - 1)
    for j in range(idx.shape[0]):
        i = np.uint64(idx[j])
        s = np.int64(size[i])
        slot = (np.int64(p[i]) * width + np.int64(m[i])) * 2 + (1 - np.int64(sequential[i]))
        if slot_dense:
            h = np.uint64(slot)
            # the slot's first request of this target is listed: written always, kept only then (a branch
            # would mispredict at every new group: a fifth of the requests of a per-file plan)
            s_pos[s_used] = h
            s_used += s_val[_U2 * h] == 0
        else:
            h = _hash(slot, s_mask)
            while s_key[h] != slot and s_key[h] != _EMPTY:
                h = (h + _U1) & s_mask
            if s_key[h] == _EMPTY:
                s_key[h] = slot
                s_pos[s_used] = h
                s_used += 1
        s_val[_U2 * h] += 1.0
        s_val[_U2 * h + _U1] += np.float64(s)
        zk = s * 4 + np.int64(op[i] == read_op) * 2
        if has_collective:
            zk += np.int64(collective[i])
        h = _hash(zk, z_mask)
        while z_key[h] != zk and z_key[h] != _EMPTY:
            h = (h + _U1) & z_mask
        if z_key[h] == _EMPTY:
            z_key[h] = zk
            z_pos[z_used] = h
            z_used += 1
        z_cnt[h] += 1
        if track_ranks:
            f = np.uint64(file_id[i])
            r = np.int64(rank[i])
            if last_rank[f] != r:  # as in _pass_dense
                last_rank[f] = r
                if first_rank[f] < 0:
                    first_rank[f] = r
                elif first_rank[f] != r:
                    multi_rank[f] = True
        if (not slot_dense and 2 * s_used > s_key.shape[0]) or 2 * z_used > z_key.shape[0]:
            return j + 1, s_used, z_used
    return idx.shape[0], s_used, z_used


@numba.njit(cache=True, nogil=True)
def aggregate_sorted(file_id: np.ndarray, p: np.ndarray, m: np.ndarray, sequential: np.ndarray, size: np.ndarray,
                     op: np.ndarray, read_op: int, collective: np.ndarray, has_collective: bool, rank: np.ndarray,
                     target_of_file: np.ndarray, n_targets: int, width: int, n_slots: int, track_ranks: bool,
                     first_rank: np.ndarray, multi_rank: np.ndarray, slot_dense: bool, order: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                np.ndarray, np.ndarray, np.ndarray]:
    """``aggregate_dense``'s results one target at a time, after a counting sort of the requests by target
    into ``order`` (returned with ``start`` first: target t's requests are ``order[start[t]:start[t+1]]``).
    ``slot_dense``: each target's groups in a table indexed by slot (n_slots ≤ ``SLOT_LIMIT``), else
    hashed."""
    nt = n_targets
    start = order_by_target(file_id, target_of_file, nt, order)
    s_val = np.zeros(2 * (n_slots if slot_dense else 1024), dtype=np.float64)
    s_key = np.full(1 if slot_dense else 1024, _EMPTY, dtype=np.int64)
    s_pos = np.empty(n_slots + 1 if slot_dense else 513, dtype=np.uint64)  # + 1: the branch-free append
    z_key = np.full(256, _EMPTY, dtype=np.int64)
    z_cnt = np.zeros(256, dtype=np.int64)
    z_pos = np.empty(129, dtype=np.uint64)
    last_rank = np.full(first_rank.shape[0] if track_ranks else 0, _EMPTY, dtype=np.int64)
    reads = np.zeros(nt, dtype=np.int64)
    nbytes = np.zeros(nt, dtype=np.int64)
    ncoll = np.zeros(nt, dtype=np.int64)
    dominant = np.zeros(nt, dtype=np.int64)
    cap = 1024
    g_t = np.empty(cap, dtype=np.int64)
    g_slot = np.empty(cap, dtype=np.int64)
    g_cnt = np.empty(cap, dtype=np.int64)
    g_byt = np.empty(cap, dtype=np.float64)
    n_groups = 0
    for t in range(nt):
        j = start[t]
        s_used = 0
        z_used = 0
        while j < start[t + 1]:
            done, s_used, z_used = _pass_target(order[j:start[t + 1]], file_id, p, m, sequential, size, op, read_op,
                                                collective, has_collective, rank, width, slot_dense, s_val, s_key,
                                                s_pos, s_used, z_key, z_cnt, z_pos, z_used, track_ranks, last_rank,
                                                first_rank, multi_rank)
            j += done
            if not slot_dense and 2 * s_used > s_key.shape[0]:
                s_key, s_val, s_pos = _grow(s_key, s_val, 2, s_pos)
            if 2 * z_used > z_key.shape[0]:
                z_key, z_cnt, z_pos = _grow(z_key, z_cnt, 1, z_pos)
        if s_used == 0:
            continue
        _size_summary(z_key, z_cnt, z_pos[:z_used], 1, t, reads, nbytes, ncoll, dominant)
        for h in z_pos[:z_used]:
            z_key[h] = _EMPTY
            z_cnt[h] = 0
        # the target's groups in slot order, then its tables cleared for the next target
        pos = s_pos[:s_used]
        slots = pos.astype(np.int64) if slot_dense else s_key[pos]
        by_slot = _key_order(slots)
        if n_groups + s_used > cap:
            cap = max(2 * cap, n_groups + s_used)
            g_t = np.concatenate((g_t[:n_groups], np.empty(cap - n_groups, dtype=np.int64)))
            g_slot = np.concatenate((g_slot[:n_groups], np.empty(cap - n_groups, dtype=np.int64)))
            g_cnt = np.concatenate((g_cnt[:n_groups], np.empty(cap - n_groups, dtype=np.int64)))
            g_byt = np.concatenate((g_byt[:n_groups], np.empty(cap - n_groups, dtype=np.float64)))
        for k in by_slot:
            h = pos[k]
            g_t[n_groups] = t
            g_slot[n_groups] = slots[k]
            g_cnt[n_groups] = np.int64(s_val[_U2 * h])
            g_byt[n_groups] = s_val[_U2 * h + _U1]
            n_groups += 1
            s_val[_U2 * h] = 0.0
            s_val[_U2 * h + _U1] = 0.0
            if not slot_dense:
                s_key[h] = _EMPTY
    return (start, reads, nbytes, ncoll, dominant, g_t[:n_groups], g_slot[:n_groups], g_cnt[:n_groups],
            g_byt[:n_groups])
