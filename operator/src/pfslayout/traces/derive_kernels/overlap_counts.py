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

Set bits in a range are counted with the CPU's popcount over 64-bit words plus two levels of block counts (64
words, 4096 words), so a query costs O(range / 64) words for short ranges and O(N / 2¹⁸) at worst for one
spanning the whole log: the long overlapping requests the reference's gap correction exists for are
exact here by construction, with no correction.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from pfslayout.traces.derive_kernels.start_order import sort_into
from pfslayout.traces.derive_kernels.unchecked_index import ix

_ONE = np.uint64(1)
_SIX = np.uint64(6)
_LOW = np.uint64(63)
_DIRECT = 128  # ranges up to this many words (or blocks) are summed directly


@intrinsic
def _ctpop(typingctx: Any, x: Any) -> tuple[Any, Any]:
    """The CPU's population count (LLVM ctpop): one instruction where a portable bit-twiddling count is a dozen."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return sig, codegen


@intrinsic
def _count_at_least16(typingctx: Any, arr: Any, base: Any, lo: Any) -> tuple[Any, Any]:
    """How many of the 16 int32 entries ``arr[base:base + 16]`` are >= ``lo`` (int32): one vector compare
    and a popcount. LLVM leaves the plain loop scalar (16 compares, 9 ns a query on the bench); ``base`` is
    a multiple of 16 inside the array, so the one load stays in bounds."""
    sig = types.int64(arr, base, lo)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
            context, builder, aryty, ary, [args[1]], wraparound=False)
        vec = ir.VectorType(ir.IntType(32), 16)
        values = builder.load(builder.bitcast(ptr, vec.as_pointer()), align=4)
        lo_v = builder.insert_element(ir.Constant(vec, ir.Undefined), args[2], ir.Constant(ir.IntType(32), 0))
        lo_v = builder.shuffle_vector(lo_v, ir.Constant(vec, ir.Undefined), ir.Constant(vec, [0] * 16))
        mask = builder.bitcast(builder.icmp_signed(">=", values, lo_v), ir.IntType(16))
        return builder.zext(builder.ctpop(mask), ir.IntType(64))

    return sig, codegen


@numba.njit(inline="always")
def _popcount(x: np.uint64) -> int:
    # through int64: numba types int() of an integer as that integer's type (a uint64 here), and int64 +
    # uint64 as float64, which made every count a float
    return int(np.int64(_ctpop(x)))  # type: ignore[call-arg]  # an intrinsic: numba passes the typing context


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


_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_BUSY = np.iinfo(np.int32).max  # a busy rank's lane in m's idle positions: at or past every position
_LANES_SMALL = 16  # ranks per node most clusters have at most (m's lanes, see sweep_windows)
_LANES_WIDE = 64  # m's lanes for wider nodes (derive_fast.MAX_NODE_WIDTH)
_LONG_WORDS = 64  # ranges spanning more words than this are summed from the block counts
_SHORT_WORDS = 4  # ranges within this many words are counted with a fixed number of masked words
PAD_WORDS = _SHORT_WORDS  # words after the last one: a short range near the log's end reads them (empty)


@numba.njit(inline="always")
def _low(x: int) -> np.uint64:
    """Bits [0, x) set, 0 <= x <= 64."""
    return _ALL if x >= 64 else (_ONE << np.uint64(x)) - _ONE


@numba.njit(inline="always")
def _ones_if(cond: bool) -> np.uint64:
    """All 64 bits if ``cond``, else none: a mask without a branch."""
    return np.uint64(0) - np.uint64(cond)


@numba.njit(inline="always")
def _bits_short(words: np.ndarray, lo: int, hi: int) -> int:
    """Set bits in [lo, hi), lo <= hi, for a range within ``_SHORT_WORDS`` (4) words — nearly every query: a
    request sees the ranks gone idle while it ran. Reads 4 words from lo's, each masked (the log is padded,
    so they stay inside it); the caller takes ``_bits_words`` or ``_count_bits`` for longer ranges.

    Straight-line code on purpose, no branch or loop: numba increfs the arrays an inlined helper takes and
    decrefs them where they die, and only when that is one basic block does its reference-count pruning
    remove the pair; otherwise every call costs four atomic NRT calls (~30 ns a query, over half of the
    sweep's time on the bench, where the same count with a loop and a branch to the long path took it)."""
    wl = lo >> 6
    nw = (hi >> 6) - wl
    first = ~_low(lo & 63)
    last = _low(hi & 63)
    w0 = words[ix(wl)] & first & (last | _ones_if(nw != 0))
    w1 = words[ix(wl + 1)] & _ones_if(nw >= 1) & (last | _ones_if(nw != 1))
    w2 = words[ix(wl + 2)] & _ones_if(nw >= 2) & (last | _ones_if(nw != 2))
    w3 = words[ix(wl + 3)] & _ones_if(nw >= 3) & (last | _ones_if(nw != 3))
    return _popcount(w0) + _popcount(w1) + _popcount(w2) + _popcount(w3)


@numba.njit(inline="always")
def _bits_words(words: np.ndarray, lo: int, hi: int) -> int:
    """Set bits in [lo, hi) for a range of ``_SHORT_WORDS`` to ``_LONG_WORDS`` words (a long request's, or
    any on a file set with many ranks): whole words between the partial first and last. The caller picks
    it, or ``_count_bits`` past ``_LONG_WORDS``: with that choice inside the inlined helper, its reference
    counts stayed (see ``_bits_short``; ~30 ns a query, as a compiled call too)."""
    wl = lo >> 6
    wh = hi >> 6
    total = _popcount(words[ix(wl)] & ~_low(lo & 63))
    for w in range(wl + 1, wh + 1):
        total += _popcount(words[ix(w)])
    return total - _popcount(words[ix(wh)] & ~_low(hi & 63))


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
    n_words = (seg[n_keys] >> 6) + 1 + PAD_WORDS
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
                lo = seg[k] + out[r]
                hi = log_end[k]
                count = _bits_short(words, lo, hi)  # as in sweep_windows: the length's branches written here
                nw = (hi >> 6) - (lo >> 6)
                if nw >= _SHORT_WORDS:
                    count = _bits_words(words, lo, hi) if nw <= _LONG_WORDS else _count_bits(words, c1, c2, lo, hi)
                out[r] = busy[k] + count
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


@numba.njit(inline="always")
def _start(pr: int, k: int, inflight: np.ndarray, busy: np.ndarray, slot: np.ndarray, words: np.ndarray,
           c1: np.ndarray, c2: np.ndarray, sentinel: int) -> None:
    """A request of pair ``pr`` (key ``k``) starts: if its rank was idle it is busy again and its idle
    entry goes. Branch-free: a pair without an entry points at a sentinel bit past the log."""
    idle = inflight[ix(pr)] == 0
    busy[ix(k)] += idle
    b = slot[ix(pr)]
    words[ix(b >> 6)] &= ~(np.uint64(idle) << np.uint64(b & 63))
    c1[ix(b >> 12)] -= idle
    c2[ix(b >> 18)] -= idle
    slot[ix(pr)] = sentinel
    inflight[ix(pr)] += 1


@numba.njit(inline="always")
def _end(pr: int, k: int, inflight: np.ndarray, busy: np.ndarray, log_end: np.ndarray, words: np.ndarray,
         c1: np.ndarray, c2: np.ndarray, slot: np.ndarray, sentinel: int) -> tuple[int, bool]:
    """A request of pair ``pr`` (key ``k``) ends: if its rank goes idle, an entry at the log's end (bit
    ``b``) records it. Branch-free; returns (b, whether the rank went idle)."""
    inflight[ix(pr)] -= 1
    idle = inflight[ix(pr)] == 0
    busy[ix(k)] -= idle
    b = log_end[ix(k)]
    log_end[ix(k)] = b + idle
    words[ix(b >> 6)] |= np.uint64(idle) << np.uint64(b & 63)
    c1[ix(b >> 12)] += idle
    c2[ix(b >> 18)] += idle
    slot[ix(pr)] = sentinel + (b - sentinel) * idle  # arithmetic, not a conditional expression: see _bits_short
    return b, idle


@numba.njit(inline="always")
def _late16(idle_at: np.ndarray, base: int, lo: int) -> int:
    """Ranks of one (key, node) of 16 lanes whose lane lies at or past log position ``lo``: those busy now
    and those whose idle entry came after ``lo``. Straight-line (see ``_bits_short``)."""
    return int(_count_at_least16(idle_at, base, np.int32(lo)))  # type: ignore[call-arg]  # an intrinsic


@numba.njit(inline="always")
def _late64(idle_at: np.ndarray, base: int, lo: int) -> int:
    """``_late16`` over 64 lanes (nodes of 17 to 64 ranks): four vector counts, straight-line. Lanes
    without a rank hold -1, never at or past a position, so a node's unused lanes count nothing."""
    return (_late16(idle_at, base, lo) + _late16(idle_at, base + 16, lo) + _late16(idle_at, base + 32, lo)
            + _late16(idle_at, base + 48, lo))


def sweep_windows(start: np.ndarray, ord_s: np.ndarray, es: np.ndarray, pair_s: np.ndarray, start_bounds: np.ndarray,
                  by_end: np.ndarray, end_bounds: np.ndarray, key_of_pair: np.ndarray, n_keys: int,
                  mkey_of_pair: np.ndarray, slot_of_pair: np.ndarray, n_mkeys: int, width: int,
                  want_m: bool) -> tuple[np.ndarray, np.ndarray]:
    """``distinct_overlaps`` for requests in start order, window by window (``start_order.start_order``):
    ``start[ord_s]``/``es``/``pair_s`` are their starts, effective ends (> start) and (key, rank) pair ids.
    Returns p per request in start order and, with ``want_m``, m — distinct ranks of the request's node
    (``mkey_of_pair``: (key, node) index; ``slot_of_pair``: the rank's lane 0..width-1, width <= 64).

    Each window's ends are sorted while in cache; with the starts already in order, the sweep then reads
    small sequential lists and positions near the current one. m needs no idle log: with at most 64 ranks
    per node, each (key, node) lane keeps the p log position of its rank's last idle entry (a busy rank:
    the largest int32, never seen: -1), and a request counts the lanes at or past its own start position:
    the ranks busy at its end plus those that went idle after it started (the log's own rule).

    One compiled sweep per case (p alone; p and m over 16 lanes; over more): whether m is counted, and
    how, is a constant in each, so its tests leave the loop (the sweep 7% faster than one taking them
    as arguments)."""
    args = (start, ord_s, es, pair_s, start_bounds, by_end, end_bounds, key_of_pair, n_keys, mkey_of_pair,
            slot_of_pair, n_mkeys, width)
    if not want_m:
        return _sweep_p(*args)
    return _sweep_pm16(*args) if width <= _LANES_SMALL else _sweep_pm_wide(*args)


@numba.njit(inline="always")
def _sweep(start: np.ndarray, ord_s: np.ndarray, es: np.ndarray, pair_s: np.ndarray, start_bounds: np.ndarray,
           by_end: np.ndarray, end_bounds: np.ndarray, key_of_pair: np.ndarray, n_keys: int, mkey_of_pair: np.ndarray,
           slot_of_pair: np.ndarray, n_mkeys: int, width: int, want_m: bool,
           small: bool) -> tuple[np.ndarray, np.ndarray]:
    """``sweep_windows``, inlined into one compiled function per constant ``want_m`` and ``small`` (16
    lanes per (key, node), for width <= 16)."""
    n = ord_s.shape[0]
    seg = np.zeros(n_keys + 1, dtype=np.int64)
    for j in range(n):
        seg[key_of_pair[pair_s[j]] + 1] += 1
    for k in range(n_keys):
        seg[k + 1] = seg[k] + ((seg[k + 1] + 63) >> 6 << 6)
    sentinel = seg[n_keys] + 64
    n_words = (sentinel >> 6) + 1 + PAD_WORDS
    words = np.zeros(n_words, dtype=np.uint64)
    c1 = np.zeros((n_words >> 6) + 1, dtype=np.int32)
    c2 = np.zeros((n_words >> 12) + 1, dtype=np.int32)
    log_end = seg[:n_keys].copy()
    busy = np.zeros(n_keys, dtype=np.int32)
    n_pairs = key_of_pair.shape[0]
    inflight = np.zeros(n_pairs, dtype=np.int32)
    slot = np.full(n_pairs, sentinel, dtype=np.int64)
    lanes = _LANES_SMALL if small else _LANES_WIDE  # per (key, node): one vector count, or four
    lane_of_pair = np.zeros(n_pairs if want_m else 0, dtype=np.int64)  # a pair's lane in idle_at
    base_of_pair = np.zeros(n_pairs if want_m else 0, dtype=np.int64)  # its (key, node)'s first lane
    for pr in range(n_pairs if want_m else 0):
        base_of_pair[pr] = mkey_of_pair[pr] * lanes
        lane_of_pair[pr] = base_of_pair[pr] + slot_of_pair[pr]
    idle_at = np.full(n_mkeys * lanes if want_m else 0, -1, dtype=np.int32)
    outp = np.empty(n, dtype=np.int32)  # a query's log position (from its start) until its end, then p
    outm = np.empty(n if want_m else 0, dtype=np.int32)
    nc = start_bounds.shape[0] - 1
    big = 1
    for c in range(nc):
        big = max(big, end_bounds[c + 1] - end_bounds[c])
    le = np.empty(big, dtype=np.float64)  # one window's ends, sorted, with their positions
    lq = np.empty(big, dtype=np.int32)
    t_key = np.empty(big, dtype=np.float64)
    t_idx = np.empty(big, dtype=np.int32)
    u_key = np.empty(big, dtype=np.float64)
    u_idx = np.empty(big, dtype=np.int32)
    hist = np.empty(512, dtype=np.int64)
    for c in range(nc):
        a = end_bounds[c]
        ne = end_bounds[c + 1] - a
        for j in range(ne):
            q = by_end[ix(a + j)]
            t_key[ix(j)] = es[ix(q)]
            t_idx[ix(j)] = q
        sort_into(t_key, t_idx, ne, le, lq, u_key, u_idx, hist)
        # every event of an instant is in this window: the sweep below is a whole-trace sweep's, over this
        # window's starts (positions i_s..z_s) and ends (a start may end in a later window, so starts can
        # outlast the ends here)
        i_s = start_bounds[c]
        z_s = start_bounds[c + 1]
        i_e = 0
        ts = start[ix(ord_s[ix(i_s)])] if i_s < z_s else np.inf
        te = le[0] if ne else np.inf
        while i_e < ne or i_s < z_s:
            if ts < te:  # a start with no end at its instant: it appends nothing, so it is recorded at once
                pr = pair_s[ix(i_s)]
                k = key_of_pair[ix(pr)]
                if want_m:
                    idle_at[ix(lane_of_pair[ix(pr)])] = _BUSY
                _start(pr, k, inflight, busy, slot, words, c1, c2, sentinel)
                outp[ix(i_s)] = log_end[ix(k)] - seg[ix(k)]
                i_s += 1
                ts = start[ix(ord_s[ix(i_s)])] if i_s < z_s else np.inf
                continue
            t = te
            q = lq[ix(i_e)]
            nxt = le[ix(i_e + 1)] if i_e + 1 < ne else np.inf
            if nxt != t and ts != t:
                # one end alone at its instant, the common case: its query, then its end, without the
                # general path's loops (whose exits mispredict; a quarter of the sweep's time on the bench).
                # The query is written out here and in the general path on purpose: a helper holding its
                # branch to the long count would keep its arrays' reference counts (see _bits_short)
                pr = pair_s[ix(q)]
                k = key_of_pair[ix(pr)]
                lo = seg[ix(k)] + outp[ix(q)]
                hi = log_end[ix(k)]
                count = _bits_short(words, lo, hi)
                nw = (hi >> 6) - (lo >> 6)
                if nw >= _SHORT_WORDS:
                    count = _bits_words(words, lo, hi) if nw <= _LONG_WORDS else _count_bits(words, c1, c2, lo, hi)
                outp[ix(q)] = busy[ix(k)] + count
                if want_m:
                    base = base_of_pair[ix(pr)]
                    outm[ix(q)] = _late16(idle_at, base, lo) if small else _late64(idle_at, base, lo)
                b, idle = _end(pr, k, inflight, busy, log_end, words, c1, c2, slot, sentinel)
                if want_m:  # a select, not a branch: going idle or not is unpredictable
                    idle_at[ix(lane_of_pair[ix(pr)])] = b if idle else _BUSY
                i_e += 1
                te = nxt
                continue
            # several ends at t, or starts at t too: the general order of one instant
            j_e = i_e + 1
            while j_e < ne and le[ix(j_e)] == t:
                j_e += 1
            for j in range(i_e, j_e):  # queries ending at t: starts < t and ends < t are in
                q = lq[ix(j)]
                pr = pair_s[ix(q)]
                k = key_of_pair[ix(pr)]
                lo = seg[ix(k)] + outp[ix(q)]
                hi = log_end[ix(k)]
                count = _bits_short(words, lo, hi)
                nw = (hi >> 6) - (lo >> 6)
                if nw >= _SHORT_WORDS:
                    count = _bits_words(words, lo, hi) if nw <= _LONG_WORDS else _count_bits(words, c1, c2, lo, hi)
                outp[ix(q)] = busy[ix(k)] + count
                if want_m:
                    base = base_of_pair[ix(pr)]
                    outm[ix(q)] = _late16(idle_at, base, lo) if small else _late64(idle_at, base, lo)
            j_s = i_s
            if ts == t:  # starts at t (rare): after the queries ending at t, before the ends at t
                while j_s < z_s and start[ix(ord_s[ix(j_s)])] == t:
                    pr = pair_s[ix(j_s)]
                    if want_m:
                        idle_at[ix(lane_of_pair[ix(pr)])] = _BUSY
                    _start(pr, key_of_pair[ix(pr)], inflight, busy, slot, words, c1, c2, sentinel)
                    j_s += 1
            for j in range(i_e, j_e):  # ends at t
                pr = pair_s[ix(lq[ix(j)])]
                b, idle = _end(pr, key_of_pair[ix(pr)], inflight, busy, log_end, words, c1, c2, slot, sentinel)
                if want_m:
                    idle_at[ix(lane_of_pair[ix(pr)])] = b if idle else _BUSY
            for j in range(i_s, j_s):  # queries starting at t: their log position covers the ends at t
                k = key_of_pair[ix(pair_s[ix(j)])]
                outp[ix(j)] = log_end[ix(k)] - seg[ix(k)]
            i_s = j_s
            ts = start[ix(ord_s[ix(i_s)])] if i_s < z_s else np.inf
            i_e = j_e
            te = le[ix(i_e)] if i_e < ne else np.inf
    return outp, outm


@numba.njit(cache=True, nogil=True)
def _sweep_p(start: np.ndarray, ord_s: np.ndarray, es: np.ndarray, pair_s: np.ndarray, start_bounds: np.ndarray,
             by_end: np.ndarray, end_bounds: np.ndarray, key_of_pair: np.ndarray, n_keys: int,
             mkey_of_pair: np.ndarray, slot_of_pair: np.ndarray, n_mkeys: int,
             width: int) -> tuple[np.ndarray, np.ndarray]:
    return _sweep(start, ord_s, es, pair_s, start_bounds, by_end, end_bounds, key_of_pair, n_keys, mkey_of_pair,
                  slot_of_pair, n_mkeys, width, False, True)


@numba.njit(cache=True, nogil=True)
def _sweep_pm16(start: np.ndarray, ord_s: np.ndarray, es: np.ndarray, pair_s: np.ndarray, start_bounds: np.ndarray,
                by_end: np.ndarray, end_bounds: np.ndarray, key_of_pair: np.ndarray, n_keys: int,
                mkey_of_pair: np.ndarray, slot_of_pair: np.ndarray, n_mkeys: int,
                width: int) -> tuple[np.ndarray, np.ndarray]:
    return _sweep(start, ord_s, es, pair_s, start_bounds, by_end, end_bounds, key_of_pair, n_keys, mkey_of_pair,
                  slot_of_pair, n_mkeys, width, True, True)


@numba.njit(cache=True, nogil=True)
def _sweep_pm_wide(start: np.ndarray, ord_s: np.ndarray, es: np.ndarray, pair_s: np.ndarray,
                   start_bounds: np.ndarray, by_end: np.ndarray, end_bounds: np.ndarray, key_of_pair: np.ndarray,
                   n_keys: int, mkey_of_pair: np.ndarray, slot_of_pair: np.ndarray, n_mkeys: int,
                   width: int) -> tuple[np.ndarray, np.ndarray]:
    return _sweep(start, ord_s, es, pair_s, start_bounds, by_end, end_bounds, key_of_pair, n_keys, mkey_of_pair,
                  slot_of_pair, n_mkeys, width, True, False)


@numba.njit(cache=True, nogil=True)
def unorder(ord_s: np.ndarray, p_s: np.ndarray, m_s: np.ndarray, want_m: bool) -> tuple[np.ndarray, np.ndarray]:
    """p and m from start order back to the trace's order, in one pass (numpy's ``p[ord_s] = p_s`` widens
    the int32 index to a temporary int64 copy for each column)."""
    n = ord_s.shape[0]
    p = np.empty(n, dtype=np.int32)
    m = np.empty(n if want_m else 0, dtype=np.int32)
    for j in range(n):
        i = ix(ord_s[j])
        p[i] = p_s[j]
        if want_m:
            m[i] = m_s[j]
    return p, m
