"""Per-request model inputs from a raw trace: concurrency p, ranks per node m, sequential vs random,
and per file the dominant request size (docs/seeds.md §3.5, §6 A4/A5).

Two implementations with identical results: the default fast path (``derive_fast``: numba bucket sorts
and one time sweep per count, O(N) expected) and the reference (``method="reference"``: vectorised numpy
sorts, ``searchsorted``, cumulative maxima and a merge-sort tree, O(N log² N)), kept to test against.

Definitions (docs/trace-format.md, "Derived model inputs"):

* **p** of request i — the number of *distinct* ranks with an I/O in flight on the same file set
  (by default: files in the same directory, the unit a layout applies to) at some moment during
  [start_i, end_i). Collective records use the communicator size instead.
* **m** of request i — how many of those ranks run on the issuing rank's node, when the trace knows
  nodes; 1 otherwise (every rank treated as its own client node, the model's least client-bound case).
  Collective records use the number of ranks on the issuing node.
* **sequential** — the offset equals the end (offset + size) of the same rank's previous request on
  the same file; a rank's first request on a file is sequential when it starts at offset 0.
* **dominant size** of a file — its most common request size (ties: the larger size).
"""

from __future__ import annotations

import os

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.model import Trace

GROUPS = ("directory", "file")
M_OF = ("issuing-node", "busiest-node")
METHODS = ("fast", "reference")


def derive(trace: Trace, *, group: str = "directory", m_of: str = "issuing-node", method: str = "fast") -> Trace:
    """Fill ``p``, ``m``, ``sequential``, ``dominant_size``, ``file_set`` and ``file_sets`` in place; returns
    the trace. ``group`` picks the file set concurrency is counted over: ``directory`` or ``file``.
    ``m_of``: ``issuing-node`` (default) counts the overlapping ranks on the request's own node;
    ``busiest-node`` the largest count on any node (the other reading of docs/seeds.md §6 A4; one more count
    per node). ``method``: ``fast`` (default; ``derive_fast``: linear-time sorts and one sweep per count)
    or ``reference`` (the original sort/merge-sort-tree implementation) — the results are identical."""
    if group not in GROUPS:
        raise InputError("group", f"unknown file-set grouping {group!r}", f"use one of {', '.join(GROUPS)}")
    if m_of not in M_OF:
        raise InputError("m_of", f"unknown m definition {m_of!r}", f"use one of {', '.join(M_OF)}")
    if method not in METHODS:
        raise InputError("method", f"unknown derive method {method!r}", f"use one of {', '.join(METHODS)}")
    if len(trace) == 0:
        raise InputError("trace", "has no I/O requests", "trace a run that reads or writes data")
    # Imported here: numba and llvmlite cost ~100 MB of memory, and the operator process, which imports
    # this module through the planner, never derives a trace (its collector Jobs do).
    from pfslayout.traces import derive_fast

    if method == "fast" and derive_fast.fast_path_applies(trace):
        return _derive_fast(trace, group, m_of)
    return _derive_reference(trace, group, m_of)


def _derive_fast(trace: Trace, group: str, m_of: str) -> Trace:
    from pfslayout.traces import derive_fast
    from pfslayout.traces.derive_kernels import pair_groups

    n = len(trace)
    set_names, file_set = _file_sets(trace.files, int(trace.file_id.max()) + 1, group)
    trace.file_sets = set_names
    trace.file_set = file_set
    rank = trace.rank
    # ranks present with their node: node is a function of the rank, so this is the reference's
    # distinct (rank, node) columns without sorting N pairs
    top = int(rank.max())
    present = pair_groups.present(rank, top + 1) if top < 4 * n + (1 << 20) else np.unique(rank)
    node_of_rank = None  # node per rank index (absent ranks: -1)
    per_node = None
    m_mode = "none"
    node_of_present = _node_of_request(trace.node_of_rank, present.astype(np.int64))
    if node_of_present is not None:
        # a per-rank table, int32 where it fits; a node per request is looked up only where needed
        dtype = np.int32 if int(node_of_present.max()) <= np.iinfo(np.int32).max else np.int64
        node_of_rank = np.full(int(present[-1]) + 1, -1, dtype=dtype)
        node_of_rank[present] = node_of_present
        per_node = np.bincount(node_of_present)
        ranks_per_node = per_node[per_node > 0]
        if ranks_per_node.size > 1 and ranks_per_node.max() > 1:
            m_mode = m_of
    # the file set per request is handed over, not kept here: counts frees it once it has its pair ids
    p, m_counted = derive_fast.counts(trace, [pair_groups.take(file_set, trace.file_id)], node_of_rank, m_mode,
                                      len(set_names))
    if node_of_rank is None:
        m = np.ones(n, dtype=np.int32)
    elif m_counted is not None:
        m = m_counted
    elif per_node is not None and np.count_nonzero(per_node) == 1:
        m = p.copy()  # one node: every overlapping rank is on the issuing node
    else:
        m = np.ones(n, dtype=np.int32)  # one rank per node

    if trace.collective is not None and np.any(trace.collective):
        coll = np.asarray(trace.collective, dtype=bool)
        comm = trace.nprocs if trace.nprocs else int(present.size)
        if comm > np.iinfo(np.int32).max:  # the reference's int64 arithmetic, then its int32 cast
            p, m = p.astype(np.int64), m.astype(np.int64)
        p[coll] = comm
        m[coll] = 1 if node_of_rank is None or per_node is None else per_node[node_of_rank[rank[coll]]]
    np.minimum(m, p, out=m)
    trace.p = p.astype(np.int32, copy=False)
    trace.m = m.astype(np.int32, copy=False)
    trace.sequential = derive_fast.sequential(trace)
    trace.dominant_size = derive_fast.dominant_sizes(trace.file_id, trace.size, len(trace.files))
    return trace


def _derive_reference(trace: Trace, group: str, m_of: str) -> Trace:
    """Today's original implementation, kept as the reference the fast path is tested against: integer
    ticks from ``np.unique``, busy periods per (key, rank) and a merge-sort-tree gap correction."""
    n = len(trace)
    set_names, file_set = _file_sets(trace.files, int(trace.file_id.max()) + 1, group)
    trace.file_sets = set_names
    trace.file_set = file_set
    req_set = file_set[trace.file_id].astype(np.int64)

    s_tick, e_tick = _ticks(trace.start, trace.end)
    rank = trace.rank.astype(np.int64)
    p = _distinct_overlaps(req_set, rank, s_tick, e_tick)

    node = _node_of_request(trace.node_of_rank, rank)
    if node is None:
        m = np.ones(n, dtype=np.int64)
    else:
        ranks_per_node = np.bincount(np.unique(np.stack([rank, node]), axis=1)[1])
        ranks_per_node = ranks_per_node[ranks_per_node > 0]
        if ranks_per_node.size == 1:
            m = p.copy()  # one node: every overlapping rank is on the issuing node
        elif ranks_per_node.max() == 1:
            m = np.ones(n, dtype=np.int64)  # one rank per node
        elif m_of == "busiest-node":
            m = np.zeros(n, dtype=np.int64)
            for k in np.unique(node):  # a loop over nodes, each count vectorised over all requests
                on_k = node == k
                m = np.maximum(m, _distinct_overlaps(req_set[on_k], rank[on_k], s_tick[on_k], e_tick[on_k],
                                                     queries=(req_set, s_tick, e_tick)))
        else:
            n_nodes = int(node.max()) + 1
            m = _distinct_overlaps(req_set * n_nodes + node, rank, s_tick, e_tick)

    if trace.collective is not None and np.any(trace.collective):
        coll = np.asarray(trace.collective, dtype=bool)
        comm = trace.nprocs if trace.nprocs else int(np.unique(trace.rank).size)
        p[coll] = comm
        if node is not None:
            rank_node = np.unique(np.stack([rank, node]), axis=1)  # one column per (rank, its node)
            per_node = np.bincount(rank_node[1])
            m[coll] = per_node[node[coll]]
        else:
            m[coll] = 1
    m = np.minimum(m, p)

    trace.p = p.astype(np.int32)
    trace.m = m.astype(np.int32)
    trace.sequential = _sequential(trace)
    trace.dominant_size = dominant_sizes(trace.file_id, trace.size, len(trace.files))
    return trace


def _node_of_request(node_of_rank: np.ndarray | None, rank: np.ndarray) -> np.ndarray | None:
    """Node index per request; a rank the table does not cover (or marks -1) is put on a node of its own
    rather than silently sharing one."""
    if node_of_rank is None:
        return None
    table = np.asarray(node_of_rank, dtype=np.int64)
    known = rank < table.size
    node = np.full(rank.shape[0], -1, dtype=np.int64)
    node[known] = table[rank[known]]
    unknown = node < 0
    if np.any(unknown):
        node[unknown] = max(int(table.max(initial=-1)), -1) + 1 + rank[unknown]
    return node


def _file_sets(files: list[str], n_ids: int, group: str) -> tuple[list[str], np.ndarray]:
    names = list(files) + [f"<file {i}>" for i in range(len(files), n_ids)]
    keys = [os.path.dirname(f) or "." for f in names] if group == "directory" else names
    uniq, inverse = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    return [str(u) for u in uniq], inverse.astype(np.int32)


def _ticks(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times → exact integer ticks preserving order; a zero-length request gets half a tick so that it
    counts the ranks in flight at its instant (start <= t < end) instead of nothing."""
    times = np.concatenate([start, end])
    _, codes = np.unique(times, return_inverse=True)
    codes = codes.astype(np.int64).reshape(-1) * 2
    n = start.shape[0]
    s, e = codes[:n], codes[n:]
    e = np.where(e <= s, s + 1, e)
    return s, e


def _distinct_overlaps(key: np.ndarray, rank: np.ndarray, s: np.ndarray, e: np.ndarray,
                       queries: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """For each request i: how many distinct ranks with the same ``key`` have a request overlapping
    [s_i, e_i) (half-open integer ticks). Exact, O(N log² N). ``queries`` = (key, s, e) of other
    intervals to count for instead of the requests themselves.

    Each (key, rank)'s requests are merged into disjoint busy periods. The periods overlapping a query
    are counted with two searchsorted calls; a rank is counted once per overlapping period, so the
    surplus — the same rank's consecutive periods both overlapping the query, i.e. the idle gaps between
    them lying strictly inside it — is subtracted (``_count_inside``).
    """
    qkey, qs, qe = queries if queries is not None else (key, s, e)
    span = int(max(e.max(), qe.max())) + 2
    _, dense = np.unique(np.concatenate([key, qkey]), return_inverse=True)
    dense = dense.astype(np.int64).reshape(-1)
    gkey, qgkey = dense[: key.shape[0]], dense[key.shape[0]:]
    rmax = int(rank.max()) + 1
    _, kr = np.unique(gkey * rmax + rank, return_inverse=True)
    kr = kr.astype(np.int64).reshape(-1)

    order = np.lexsort((s, kr))
    kr_o = kr[order]
    ss = s[order] + kr_o * span
    ee = e[order] + kr_o * span
    runmax = np.maximum.accumulate(ee)
    new = np.empty(ss.shape[0], dtype=bool)
    new[0] = True
    # touching counts as busy throughout, so back-to-back requests form one period
    new[1:] = ss[1:] > runmax[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, ss.shape[0] - 1]
    p_kr = kr_o[first]
    shift = gkey[order][first] * span - p_kr * span  # from per-(key,rank) offsets to per-key offsets
    p_start = ss[first] + shift
    p_end = runmax[last] + shift

    a = qs + qgkey * span
    b = qe + qgkey * span
    overlaps = _sorted_search(np.sort(p_start), b, "left") - _sorted_search(np.sort(p_end), a, "right")

    same = p_kr[1:] == p_kr[:-1]
    gx = p_end[:-1][same]
    gy = p_start[1:][same]
    return np.asarray(overlaps - _count_inside(gx, gy, a, b))


def _sorted_search(haystack: np.ndarray, needles: np.ndarray, side: str) -> np.ndarray:
    """``searchsorted`` with the needles visited in sorted order: consecutive binary searches then walk
    nearby memory, several times faster on millions of needles than a random visiting order."""
    order = np.argsort(needles, kind="stable")
    out = np.empty(needles.shape[0], dtype=np.int64)
    out[order] = np.searchsorted(haystack, needles[order], side=side)  # type: ignore[call-overload]
    return out


def _count_inside(gx: np.ndarray, gy: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per query j: #{gaps k : gx_k > a_j and gy_k < b_j}, with a merge-sort tree built level by level
    (each level one stable sort) and queried with one searchsorted per level — O((G + Q) log² G)."""
    out = np.zeros(a.shape[0], dtype=np.int64)
    G = gx.shape[0]
    if G == 0:
        return out
    by_x = np.argsort(gx, kind="stable")
    xs = gx[by_x]
    ys = gy[by_x]
    # Only queries with a gap starting inside them can contain one.
    cand = np.flatnonzero(np.searchsorted(xs, b, side="left") > np.searchsorted(xs, a, side="right"))
    if cand.size == 0:
        return out
    # visit queries in order of a: then the prefix length k below, and each level's block, are monotone
    cand = cand[np.argsort(a[cand], kind="stable")]
    qa, qb = a[cand], b[cand]
    y_order = np.argsort(ys, kind="stable")
    y_sorted = ys[y_order]
    y_rank = np.empty(G, dtype=np.int64)
    y_rank[y_order] = np.arange(G, dtype=np.int64)
    b_rank = _sorted_search(y_sorted, qb, "left")  # elements with y < b have rank < b_rank
    k = np.searchsorted(xs, qa, side="right")  # gaps [k, G) have x > a (qa is sorted)
    below_k = np.zeros(cand.size, dtype=np.int64)  # of gaps [0, k): how many have y < b
    idx = np.arange(G, dtype=np.int64)
    for level in range(int(G).bit_length()):
        has = (k >> level) & 1 == 1
        if not np.any(has):
            continue
        keys = np.sort((idx >> level) * G + y_rank, kind="stable")
        block = (k[has] >> (level + 1)) << 1  # index of the level-sized block [start, start + 2^level)
        below_k[has] += np.searchsorted(keys, block * G + b_rank[has], side="left") - (block << level)
    out[cand] = b_rank - below_k
    return out


def _sequential(trace: Trace) -> np.ndarray:
    order = np.lexsort((np.arange(len(trace)), trace.start, trace.rank, trace.file_id))
    f = trace.file_id[order]
    r = trace.rank[order]
    off = trace.offset[order]
    end = off + trace.size[order]
    seq_sorted = off == 0
    same = (f[1:] == f[:-1]) & (r[1:] == r[:-1])
    seq_sorted[1:] = np.where(same, off[1:] == end[:-1], off[1:] == 0)
    seq = np.empty(len(trace), dtype=bool)
    seq[order] = seq_sorted
    return seq


def dominant_sizes(file_id: np.ndarray, size: np.ndarray, n_files: int) -> np.ndarray:
    """Most common request size per file (ties → larger size); 0 for a file without requests."""
    out = np.zeros(max(n_files, int(file_id.max()) + 1 if file_id.size else 0), dtype=np.int64)
    if file_id.size == 0:
        return out
    order = np.lexsort((size, file_id))
    f = file_id[order].astype(np.int64)
    s = size[order].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, (f[1:] != f[:-1]) | (s[1:] != s[:-1])])
    counts = np.diff(np.r_[starts, f.size])
    uf, us = f[starts], s[starts]
    # last of each file after sorting by (file, count, size) is the most common, larger size on ties
    best = np.lexsort((us, counts, uf))
    last_of_file = np.r_[uf[best][1:] != uf[best][:-1], True]
    out[uf[best][last_of_file]] = us[best][last_of_file]
    return out
