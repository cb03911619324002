"""The default ``derive`` path: the same p, m, sequential flags and dominant sizes as the reference
(``derive(..., method="reference")``), from linear-time sorts one time window at a time and one time sweep
per count.

* Times stay floats. The reference maps them to integer ticks (``np.unique`` of 2N times) and gives a
  zero-length request half a tick; here a request that does not end after it starts ends at
  ``nextafter(start)`` instead. No float lies strictly between the two, so every comparison the
  overlap rule makes (s_j < e_i, e_j > s_i) has the same outcome as on ticks.
* The requests are put in start order with what the sweep reads of them, window by window
  (``derive_kernels.start_order``: a counting scatter into windows, then a sort in cache, O(N) expected),
  each filed under the window its end falls in.
* p, and m by the issuing node with up to 64 ranks per node, are counted in one time sweep over that
  order by ``overlap_counts.sweep_windows``, which sorts each window's ends as it comes to it: exact
  distinct ranks per interval, with long overlapping requests handled by construction (see that module).
  m by the busiest node, or with more ranks per node, has sweeps of its own in the original order
  (``overlap_counts.distinct_overlaps``).
* Sequential flags and dominant sizes come from direct-table, comparison or hash grouping
  (``pair_groups``), the flags in one pass in index order when each (file, rank)'s requests already come
  in start order.

The kernels live in ``derive_kernels`` (numba); this module imports them at its top, so ``derive`` imports
this module only when it runs.

Non-finite times or negative rank numbers are handed to the reference (whose tick mapping and tables
define their meaning), so the two paths agree on every input.
"""

from __future__ import annotations

import numpy as np

from pfslayout.traces.derive_kernels.overlap_counts import distinct_overlaps, sweep_windows, unorder
from pfslayout.traces.derive_kernels.pair_groups import (
    group_modes,
    pair_ids,
    pair_members,
    scan,
    sequential_flags,
    sequential_in_index_order,
)
from pfslayout.traces.derive_kernels.start_order import WINDOW_SHIFT as WINDOW_SHIFT  # re-exported: tests shrink it
from pfslayout.traces.derive_kernels.start_order import start_order
from pfslayout.traces.derive_kernels.time_argsort import stable_argsort
from pfslayout.traces.model import Trace

# ranks per node the ordered sweep's m count loops over per request (one lane per rank); wider nodes get
# m from sweeps of their own
MAX_NODE_WIDTH = 64


def fast_path_applies(trace: Trace) -> bool:
    """Inputs the fast path reproduces exactly; the rest go to the reference."""
    finite, rank_min, _, file_min = scan(trace.start, trace.end, trace.rank, trace.file_id)
    return bool(finite) and bool(rank_min >= 0) and bool(file_min >= 0)


def effective_ends(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """End times with a request that does not end after its start ending at the next float after it."""
    return np.where(end > start, end, np.nextafter(start, np.inf))


def counts(trace: Trace, handed: list[np.ndarray], node_of_rank: np.ndarray | None, m_mode: str,
           n_sets: int) -> tuple[np.ndarray, np.ndarray | None]:
    """p per request and, for ``m_mode`` ``issuing-node``/``busiest-node`` (``none``: None), m before the
    collective and m ≤ p rules; ``handed`` holds the file set per request (taken, so that it can be
    freed early), ``node_of_rank`` the node per rank index (-1 for ranks absent)."""
    req_set = handed.pop()
    start = np.asarray(trace.start, dtype=np.float64)
    rank = trace.rank
    pair, n_pairs = pair_ids(req_set, rank, int(rank.max()) + 1)  # (file set, rank): one in-flight count each
    width = 0
    lane = None
    if node_of_rank is not None and m_mode == "issuing-node":
        present = node_of_rank >= 0
        lane = np.full(node_of_rank.shape[0], -1, dtype=np.int32)
        lane[present], width = node_lanes(node_of_rank[present])
    if m_mode == "none" or node_of_rank is None or (lane is not None and width <= MAX_NODE_WIDTH):
        set_of_pair, rank_of_pair = pair_members(pair, req_set, rank, n_pairs)
        # peak memory: only the sweep's start-ordered columns are alive during it, so neither the file
        # sets nor the pair ids are kept here
        del req_set
        handed_pairs = [pair]
        del pair
        return _ordered_counts(trace, start, handed_pairs, set_of_pair, rank_of_pair, n_sets,
                               None if m_mode == "none" else node_of_rank, lane, width)
    # m by node over more than 64 ranks per node, or the busiest node: sweeps in the original order
    end = effective_ends(start, np.asarray(trace.end, dtype=np.float64))
    ord_s = stable_argsort(start)
    ord_e = stable_argsort(end)
    p = distinct_overlaps(ord_s, ord_e, start, end, req_set, req_set, pair, n_sets, n_pairs)
    node = node_of_rank[rank]
    if m_mode == "issuing-node":
        # (file set, node) keys, densified: node numbers may be sparse (ranks without a node get their own)
        key, n_keys = pair_ids(req_set, node, int(node.max()) + 1)
        return p, distinct_overlaps(ord_s, ord_e, start, end, key, key, pair, n_keys, n_pairs)
    m = np.zeros(len(trace), dtype=np.int32)
    no_data = np.full(len(trace), -1, dtype=req_set.dtype)
    for k in np.unique(node):  # one sweep per node, as the reference does one count per node
        data = np.where(node == k, req_set, no_data)
        np.maximum(m, distinct_overlaps(ord_s, ord_e, start, end, data, req_set, pair, n_sets, n_pairs), out=m)
    return p, m


def node_lanes(nodes: np.ndarray) -> tuple[np.ndarray, int]:
    """For ranks on ``nodes``: each rank's lane 0..w-1 among the ranks of its node, and w, the most
    ranks on one node."""
    order = np.argsort(nodes, kind="stable")
    by_node = nodes[order]
    lane = np.empty(nodes.shape[0], dtype=np.int32)
    lane[order] = np.arange(order.shape[0]) - np.searchsorted(by_node, by_node, side="left")
    return lane, int(lane.max(initial=-1)) + 1


def _ordered_counts(trace: Trace, start: np.ndarray, handed: list[np.ndarray], set_of_pair: np.ndarray,
                    rank_of_pair: np.ndarray, n_sets: int, node_of_rank: np.ndarray | None, lane: np.ndarray | None,
                    width: int) -> tuple[np.ndarray, np.ndarray | None]:
    """p, and with ``node_of_rank`` m by the issuing node, from one sweep over the requests in time order,
    one window at a time; ``handed`` holds the (file set, rank) pair id per request."""
    n_pairs = set_of_pair.shape[0]
    want_m = node_of_rank is not None and lane is not None
    if node_of_rank is not None and lane is not None:
        mkey_of_pair, n_mkeys = pair_ids(set_of_pair, node_of_rank[rank_of_pair], int(node_of_rank.max()) + 1)
        slot_of_pair = lane[rank_of_pair]
    else:
        mkey_of_pair = slot_of_pair = np.zeros(n_pairs, dtype=np.int32)
        n_mkeys = 0
    ord_s, es, pair_s, start_bounds, by_end, end_bounds = start_order(
        start, np.asarray(trace.end, dtype=np.float64), handed.pop(), WINDOW_SHIFT)
    p_s, m_s = sweep_windows(start, ord_s, es, pair_s, start_bounds, by_end, end_bounds, set_of_pair, n_sets,
                             mkey_of_pair, slot_of_pair, n_mkeys, width, want_m)
    # peak memory: the ordered columns go before p and m are put back in the trace's order
    del es, pair_s, by_end
    p, m = unorder(ord_s, p_s, m_s, want_m)
    return p, (m if want_m else None)


def sequential(trace: Trace) -> np.ndarray:
    """The reference's rule in its order: per (file, rank), by start, ties by index. Traces whose
    requests of each (file, rank) already come in start order (the shim writes each rank in call order)
    are done in one pass in index order; others visit the requests sorted by start."""
    pair, n_pairs = pair_ids(trace.file_id, trace.rank, int(trace.rank.max()) + 1)
    flags, in_order = sequential_in_index_order(pair, n_pairs, trace.start, trace.offset, trace.size)
    if in_order:
        return np.asarray(flags)
    ord_s = stable_argsort(np.asarray(trace.start, dtype=np.float64))
    return np.asarray(sequential_flags(ord_s, pair, n_pairs, trace.offset, trace.size))


def dominant_sizes(file_id: np.ndarray, size: np.ndarray, n_files: int) -> np.ndarray:
    """Most common request size per file (ties → larger size); 0 for a file without requests."""
    n_out = max(n_files, int(file_id.max()) + 1 if file_id.size else 0)
    if file_id.size == 0:
        return np.zeros(n_out, dtype=np.int64)
    return np.asarray(group_modes(file_id, size, n_out))
