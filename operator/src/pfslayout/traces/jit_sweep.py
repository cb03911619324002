"""Exact distinct-rank overlap counts in one time sweep (numba): the fast path of ``derive``'s p and m.

For a query interval [a, b) and a key (file set, or file set × node), the count is the number of distinct
ranks with a request of that key whose interval [s, e) meets [a, b), i.e. s < b and e > a. Write
M_r(b) = max{e_j : j of rank r, s_j < b}; rank r counts iff M_r(b) > a. Split at b:

* M_r(b) ≥ b: r has a request started before b and not ended before b — r is *busy* at b. A counter per
  key (``busy``) holds how many ranks are busy, from per-rank in-flight counts.
* a < M_r(b) < b: r went idle at x = M_r(b) with a < x < b. Each time a rank goes idle its key's *idle
  log* gets an entry (one bit, set), which is cleared when the rank becomes busy again; entries are
  appended in time order, so the entries with x > a are the suffix after the log's length at time a.
  The count is the number of set bits in that suffix at time b.

Events are visited in time order; at one instant t: queries ending at t (they see starts < t and ends
< t), then starts at t, then ends at t, then queries starting at t record the log length (which then
covers every x ≤ t). This is exactly the reference's half-open tick arithmetic (``derive._ticks``),
including its rule that back-to-back requests keep a rank busy and that zero-length requests count the
ranks in flight at their instant (the caller passes e = nextafter(s) for those: no float lies between).

Set bits in a range are counted with popcounts over 64-bit words plus two levels of block counts (64
words, 4096 words), so a query costs O(range / 64) words for short ranges and O(N / 2¹⁸) at worst for one
spanning the whole log: the long overlapping requests the reference's gap correction exists for are
exact here by construction, with no correction.
"""

from __future__ import annotations

import numba
import numpy as np

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE = np.uint64(1)
_SIX = np.uint64(6)
_LOW = np.uint64(63)
_S1 = np.uint64(1)
_S2 = np.uint64(2)
_S4 = np.uint64(4)
_S56 = np.uint64(56)
_DIRECT = 128  # ranges up to this many words (or blocks) are summed directly


@numba.njit(inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return int((x * _H01) >> _S56)


@numba.njit(cache=True, nogil=True)
def _count_blocks(c1: np.ndarray, c2: np.ndarray, a: int, b: int) -> int:
    """Sum of c1[a:b] (c2[k] = sum of c1[64k:64k+64])."""
    total = 0
    if b - a <= _DIRECT:
        for j in range(a, b):
            total += c1[j]
        return total
    a2 = (a + 63) >> 6
    b2 = b >> 6
    for j in range(a, a2 << 6):
        total += c1[j]
    for j in range(a2, b2):
        total += c2[j]
    for j in range(b2 << 6, b):
        total += c1[j]
    return total


@numba.njit(cache=True, nogil=True)
def _count_words(words: np.ndarray, c1: np.ndarray, c2: np.ndarray, a: int, b: int) -> int:
    """Set bits in words[a:b] (c1[k] = set bits of words[64k:64k+64])."""
    total = 0
    if b - a <= _DIRECT:
        for w in range(a, b):
            total += _popcount(words[w])
        return total
    a1 = (a + 63) >> 6
    b1 = b >> 6
    for w in range(a, a1 << 6):
        total += _popcount(words[w])
    for w in range(b1 << 6, b):
        total += _popcount(words[w])
    return total + _count_blocks(c1, c2, a1, b1)


@numba.njit(cache=True, nogil=True)
def _count_bits(words: np.ndarray, c1: np.ndarray, c2: np.ndarray, lo: int, hi: int) -> int:
    """Set bits with index in [lo, hi)."""
    if lo >= hi:
        return 0
    wl = lo >> 6
    wh = hi >> 6
    lo_bit = np.uint64(lo & 63)
    hi_bit = np.uint64(hi & 63)
    if wl == wh:
        return _popcount((words[wl] >> lo_bit) & ((_ONE << (hi_bit - lo_bit)) - _ONE))
    total = _popcount(words[wl] >> lo_bit)
    if hi_bit:
        total += _popcount(words[wh] & ((_ONE << hi_bit) - _ONE))
    return total + _count_words(words, c1, c2, wl + 1, wh)


@numba.njit(cache=True, nogil=True)
def distinct_overlaps(ord_s: np.ndarray, ord_e: np.ndarray, s: np.ndarray, e: np.ndarray, dkey: np.ndarray,
                      qkey: np.ndarray, pair: np.ndarray, n_keys: int, n_pairs: int) -> np.ndarray:
    """Per request i with ``qkey[i] >= 0``: distinct ranks among the requests j with ``dkey[j] == qkey[i]``
    whose [s_j, e_j) meets [s_i, e_i). ``ord_s``/``ord_e`` sort s/e; ``pair[j]`` identifies j's
    (key, rank) — the same for all requests of a rank under one key; ``dkey`` −1 leaves a request out of
    the data, ``qkey`` −1 asks nothing for it (0 returned). Needs e > s everywhere. int32 counts."""
    n = s.shape[0]
    # each key's idle log gets at most one entry per data request of that key; 64-bit aligned segments
    seg = np.zeros(n_keys + 1, dtype=np.int64)
    for i in range(n):
        if dkey[i] >= 0:
            seg[dkey[i] + 1] += 1
    for k in range(n_keys):
        seg[k + 1] = seg[k] + ((seg[k + 1] + 63) >> 6 << 6)
    n_words = (seg[n_keys] >> 6) + 1
    words = np.zeros(n_words, dtype=np.uint64)
    c1 = np.zeros((n_words >> 6) + 1, dtype=np.int32)
    c2 = np.zeros((n_words >> 12) + 1, dtype=np.int32)
    log_end = seg[:n_keys].copy()
    busy = np.zeros(n_keys, dtype=np.int32)
    inflight = np.zeros(n_pairs, dtype=np.int32)
    slot = np.full(n_pairs, -1, dtype=np.int64)
    out = np.zeros(n, dtype=np.int32)  # a query's log position (from its start) until its end, then the count
    i_s = 0
    i_e = 0
    while i_e < n:
        t = e[ord_e[i_e]]
        if i_s < n and s[ord_s[i_s]] < t:
            t = s[ord_s[i_s]]
        j_e = i_e  # queries ending at t: starts < t and ends < t are in
        while j_e < n and e[ord_e[j_e]] == t:
            r = ord_e[j_e]
            k = qkey[r]
            if k >= 0:
                out[r] = busy[k] + _count_bits(words, c1, c2, seg[k] + out[r], log_end[k])
            j_e += 1
        j_s = i_s  # starts at t
        while j_s < n and s[ord_s[j_s]] == t:
            r = ord_s[j_s]
            k = dkey[r]
            if k >= 0:
                pr = pair[r]
                if inflight[pr] == 0:
                    busy[k] += 1
                    b = slot[pr]
                    if b >= 0:  # busy again: its idle entry goes
                        words[b >> 6] &= ~(_ONE << np.uint64(b & 63))
                        c1[b >> 12] -= 1
                        c2[b >> 18] -= 1
                        slot[pr] = -1
                inflight[pr] += 1
            j_s += 1
        for j in range(i_e, j_e):  # ends at t
            r = ord_e[j]
            k = dkey[r]
            if k >= 0:
                pr = pair[r]
                inflight[pr] -= 1
                if inflight[pr] == 0:
                    busy[k] -= 1
                    b = log_end[k]
                    log_end[k] = b + 1
                    words[b >> 6] |= _ONE << np.uint64(b & 63)
                    c1[b >> 12] += 1
                    c2[b >> 18] += 1
                    slot[pr] = b
        for j in range(i_s, j_s):  # queries starting at t: idle entries from here on went idle after t
            r = ord_s[j]
            k = qkey[r]
            if k >= 0:
                out[r] = log_end[k] - seg[k]
        i_s = j_s
        i_e = j_e
    return out
