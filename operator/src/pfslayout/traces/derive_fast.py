"""The default ``derive`` path: the same p, m, sequential flags and dominant sizes as the reference
(``derive(..., method="reference")``), from two linear-time sorts and one time sweep per count.

* Times stay floats. The reference maps them to integer ticks (``np.unique`` of 2N times) and gives a
  zero-length request half a tick; here a request that does not end after it starts ends at
  ``nextafter(start)`` instead. No float lies strictly between the two, so every comparison the
  overlap rule makes (s_j < e_i, e_j > s_i) has the same outcome as on ticks.
* Starts and ends are ordered by ``jit_sort.stable_argsort`` (bucket sort, O(N) expected).
* p and m are counted by ``jit_sweep.distinct_overlaps``: exact distinct ranks per interval, with long
  overlapping requests handled by construction (see that module).
* Sequential flags and dominant sizes come from hash/direct-table grouping (``jit_group``).

Non-finite times or negative rank numbers are handed to the reference (whose tick mapping and tables
define their meaning), so the two paths agree on every input.
"""

from __future__ import annotations

import numpy as np

from pfslayout.traces.jit_group import group_modes, pair_ids, sequential_flags
from pfslayout.traces.jit_sort import stable_argsort
from pfslayout.traces.jit_sweep import distinct_overlaps
from pfslayout.traces.model import Trace


def fast_path_applies(trace: Trace) -> bool:
    """Inputs the fast path reproduces exactly; the rest go to the reference."""
    return (bool(np.isfinite(trace.start).all()) and bool(np.isfinite(trace.end).all())
            and int(trace.rank.min()) >= 0 and int(trace.file_id.min()) >= 0)


def effective_ends(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """End times with a request that does not end after its start ending at the next float after it."""
    return np.where(end > start, end, np.nextafter(start, np.inf))


def counts(trace: Trace, ord_s: np.ndarray, req_set: np.ndarray, node: np.ndarray | None, m_mode: str,
           n_sets: int) -> tuple[np.ndarray, np.ndarray | None]:
    """p per request and, for ``m_mode`` ``issuing-node``/``busiest-node`` (``none``: None), m before the
    collective and m ≤ p rules; ``ord_s`` the requests by start, ``node`` the node per request."""
    start = np.asarray(trace.start, dtype=np.float64)
    end = effective_ends(start, np.asarray(trace.end, dtype=np.float64))
    ord_e = stable_argsort(end)
    rank = trace.rank
    n_ranks = int(rank.max()) + 1
    pair, n_pairs = pair_ids(req_set, rank, n_ranks)  # (file set, rank): one in-flight count each
    p = distinct_overlaps(ord_s, ord_e, start, end, req_set, req_set, pair, n_sets, n_pairs)
    if m_mode == "none" or node is None:
        return p, None
    if m_mode == "issuing-node":
        # (file set, node) keys, densified: node numbers may be sparse (ranks without a node get their own)
        key, n_keys = pair_ids(req_set, node, int(node.max()) + 1)
        m = distinct_overlaps(ord_s, ord_e, start, end, key, key, pair, n_keys, n_pairs)
        return p, m
    m = np.zeros(len(trace), dtype=np.int32)
    no_data = np.full(len(trace), -1, dtype=req_set.dtype)
    for k in np.unique(node):  # one sweep per node, as the reference does one count per node
        data = np.where(node == k, req_set, no_data)
        np.maximum(m, distinct_overlaps(ord_s, ord_e, start, end, data, req_set, pair, n_sets, n_pairs), out=m)
    return p, m


def sequential(trace: Trace, ord_s: np.ndarray) -> np.ndarray:
    """The reference's rule in its order: per (file, rank), by start, ties by index (``ord_s``)."""
    pair, n_pairs = pair_ids(trace.file_id, trace.rank, int(trace.rank.max()) + 1)
    return np.asarray(sequential_flags(ord_s, pair, n_pairs, trace.offset, trace.size))


def dominant_sizes(file_id: np.ndarray, size: np.ndarray, n_files: int) -> np.ndarray:
    """Most common request size per file (ties → larger size); 0 for a file without requests."""
    n_out = max(n_files, int(file_id.max()) + 1 if file_id.size else 0)
    if file_id.size == 0:
        return np.zeros(n_out, dtype=np.int64)
    return np.asarray(group_modes(file_id, size, n_out))
