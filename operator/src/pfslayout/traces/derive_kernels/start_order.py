"""Requests in start order, one time window at a time (numba), with what the time sweep reads of them, and
each window's ends listed for the sweep (``overlap_counts.sweep_windows``).

The run's time span is cut into about N/2048 windows by ``window_of`` — ``⌊(t − lo) · scale⌋``, a
non-decreasing function of t under IEEE rounding (subtraction and multiplication by a positive constant are
monotone), clamped to the last window — so every event of one instant falls in one window, the windows
come in time order, and a request ends in its start's window or a later one.

``start_order`` lists each window's starting requests (a counting scatter of their indices, 4 bytes a
request), then, window by window, gathers their start, effective end and pair id, sorts them there by start
while they sit in the core's L1/L2 cache (``sort_into``: two byte passes over 16-bit levels, then an
insertion pass), and writes them out in start order: position P of
the output is the P-th request by start. Each request's position is also filed under the window its end
falls in (``by_end``), so that a window's ends are known once the windows up to it are ordered; the sweep
sorts each window's ends the same way. Levels are ordered among themselves and the insertion
pass is strict, so the result is exactly the stable sort by time; a window whose times crowd into a few
levels, or whose span the formula cannot take (an infinite end), falls back to a stable merge sort:
O(N log N) at worst.

Only the *effective* end of a request is used: a request that does not end after it starts ends at the next
float after its start (``derive_fast``).
"""

from __future__ import annotations

import numba
import numpy as np

from pfslayout.traces.derive_kernels.time_argsort import span
from pfslayout.traces.derive_kernels.unchecked_index import ix

WINDOW_SHIFT = 11  # ~2048 requests a window: its gathered columns and sorted lists stay in L1/L2
_LEVELS = 65536  # a window's times are quantised to 16 bits, sorted in two byte passes
_MOVES = 8  # insertion moves per event past which a window is merge-sorted instead


@numba.njit(inline="always")
def effective_end(s: float, e: float) -> float:
    return e if e > s else np.nextafter(s, np.inf)


@numba.njit(inline="always")
def window_of(t: float, lo: float, scale: float, count: int) -> int:
    """Window of time t >= lo. x is >= 0; a huge or infinite x (or NaN from inf · 0) is the last window."""
    x = (t - lo) * scale
    return int(x) if x < count else count - 1


@numba.njit(cache=True, nogil=True)
def sort_into(t_key: np.ndarray, t_idx: np.ndarray, m: int, key: np.ndarray, idx: np.ndarray, u_key: np.ndarray,
              u_idx: np.ndarray, hist: np.ndarray) -> None:
    """``t_key[:m]`` sorted into ``key[:m]``, stably, with ``t_idx`` carried into ``idx``. ``u_*`` are scratch
    of at least m entries, ``hist`` of 512.

    The times are quantised to 16 bits over their span (``_LEVELS``: a non-decreasing function of the
    time, so sorting by level and then by time is exact) and sorted by level in two stable byte passes;
    one strict insertion pass then orders the few times that share a level. Branches stay predictable
    where a bucket per event made the insertion pass mispredict at most events (a window's sort
    13 -> 8 ms per 1 M). Too many insertion moves (times crowded into a few levels), or a span the formula
    cannot take, fall back to a stable merge sort."""
    if m == 0:
        return
    lo, hi = span(t_key, 0, m)
    width = hi - lo
    scale = _LEVELS / width if width > 0 else 0.0
    if width > 0 and np.isfinite(width) and np.isfinite(scale):
        hist[:] = 0
        for j in range(m):
            q = min(int((t_key[ix(j)] - lo) * scale), _LEVELS - 1)
            hist[ix(q & 255)] += 1
            hist[ix(256 + (q >> 8))] += 1
        low = 0
        high = 0
        for b in range(256):
            c = hist[ix(b)]
            hist[ix(b)] = low
            low += c
            c = hist[ix(256 + b)]
            hist[ix(256 + b)] = high
            high += c
        for j in range(m):  # by the low byte, in the given order: stable
            x = t_key[ix(j)]
            b = min(int((x - lo) * scale), _LEVELS - 1) & 255
            d = hist[ix(b)]
            hist[ix(b)] = d + 1
            u_key[ix(d)] = x
            u_idx[ix(d)] = t_idx[ix(j)]
        for j in range(m):  # by the high byte
            x = u_key[ix(j)]
            b = 256 + (min(int((x - lo) * scale), _LEVELS - 1) >> 8)
            d = hist[ix(b)]
            hist[ix(b)] = d + 1
            key[ix(d)] = x
            idx[ix(d)] = u_idx[ix(j)]
        moves = 0
        for d in range(1, m):  # levels are ordered among themselves: one insertion pass sorts
            x = key[ix(d)]
            if key[ix(d - 1)] <= x:
                continue
            i0 = idx[ix(d)]
            j = d - 1
            while j >= 0 and key[ix(j)] > x:  # strictly greater: equal times keep their order
                key[ix(j + 1)] = key[ix(j)]
                idx[ix(j + 1)] = idx[ix(j)]
                j -= 1
            key[ix(j + 1)] = x
            idx[ix(j + 1)] = i0
            moves += d - j
            if moves > _MOVES * m:
                break
        if moves <= _MOVES * m:
            return
    if width > 0:  # crowded levels, or a span the formula cannot take
        order = np.argsort(t_key[:m], kind="mergesort")
        for d in range(m):
            key[d] = t_key[order[d]]
            idx[d] = t_idx[order[d]]
    else:  # one instant (or only infinite times): the given order is the stable order
        key[:m] = t_key[:m]
        idx[:m] = t_idx[:m]


@numba.njit(cache=True, nogil=True)
def start_order(start: np.ndarray, end: np.ndarray, pair: np.ndarray, shift: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Requests (finite ``start``/``end``, n > 0) in start order, ties by index: (ord_s, es, pair_s,
    start_bounds, by_end, end_bounds). Position P holds request ``ord_s[P]`` (its start is
    ``start[ord_s[P]]``: the sorted starts are a window's working column only, 0.19x the trace's size less
    at the peak for ~2 ms of gathers in the sweep), its effective end ``es[P]`` and pair id ``pair_s[P]``;
    window w's starts are positions
    ``start_bounds[w]:start_bounds[w + 1]``, and the positions of the requests ending in it
    ``by_end[end_bounds[w]:end_bounds[w + 1]]``, in position order."""
    n = start.shape[0]
    lo, hi = span(start, 0, n)
    width = hi - lo
    nc = max(n >> shift, 1)
    scale = nc / width if width > 0 else 0.0
    if not (np.isfinite(width) and np.isfinite(scale)):
        nc = 1  # a span too wide or too narrow for the formula: one window, sorted by the merge-sort fallback
        scale = 0.0
        lo = 0.0  # (x - 0) * 0 is 0 for every finite x; an infinite end gives NaN: the last window
    sb = np.zeros(nc + 1, dtype=np.int64)
    eb = np.zeros(nc + 1, dtype=np.int64)
    for i in range(n):
        s = start[ix(i)]
        sb[ix(window_of(s, lo, scale, nc) + 1)] += 1
        eb[ix(window_of(effective_end(s, end[i]), lo, scale, nc) + 1)] += 1
    big = 1
    for c in range(nc):
        big = max(big, sb[ix(c + 1)])
        sb[ix(c + 1)] += sb[ix(c)]
        eb[ix(c + 1)] += eb[ix(c)]
    at = sb[:nc].copy()
    by_start = np.empty(n, dtype=np.int32)
    for i in range(n):  # in index order: each window's list is in index order (stable)
        c = window_of(start[ix(i)], lo, scale, nc)
        by_start[ix(at[ix(c)])] = i
        at[ix(c)] += 1
    ord_s = np.empty(n, dtype=np.int32)
    es = np.empty(n, dtype=np.float64)
    pair_s = np.empty(n, dtype=np.int32)
    by_end = np.empty(n, dtype=np.int32)
    at_end = eb[:nc].copy()
    t_key = np.empty(big, dtype=np.float64)
    t_idx = np.empty(big, dtype=np.int32)
    g_end = np.empty(big, dtype=np.float64)
    g_pair = np.empty(big, dtype=np.int32)
    g_req = np.empty(big, dtype=np.int32)
    idx = np.empty(big, dtype=np.int32)
    ss = np.empty(big, dtype=np.float64)
    u_key = np.empty(big, dtype=np.float64)
    u_idx = np.empty(big, dtype=np.int32)
    hist = np.empty(512, dtype=np.int64)
    for c in range(nc):
        a = sb[ix(c)]
        m = sb[ix(c + 1)] - a
        for j in range(m):  # the window's requests, gathered (the shim's order: a short run per rank)
            i = by_start[ix(a + j)]
            s = start[ix(i)]
            t_key[ix(j)] = s
            t_idx[ix(j)] = j
            g_end[ix(j)] = effective_end(s, end[ix(i)])
            g_pair[ix(j)] = pair[ix(i)]
            g_req[ix(j)] = i
        sort_into(t_key, t_idx, m, ss, idx, u_key, u_idx, hist)
        for d in range(m):
            j = idx[ix(d)]
            e = g_end[ix(j)]
            ord_s[ix(a + d)] = g_req[ix(j)]
            es[ix(a + d)] = e
            pair_s[ix(a + d)] = g_pair[ix(j)]
            w = window_of(e, lo, scale, nc)
            by_end[ix(at_end[ix(w)])] = a + d
            at_end[ix(w)] += 1
    return ord_s, es, pair_s, sb, by_end, eb
