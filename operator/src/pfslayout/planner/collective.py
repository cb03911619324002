"""Collective-buffering hints from the shuffle cost (seed 004; docs/cost-model.md, "Collective I/O").

A collective call of P ranks moves S bytes. Two-phase I/O (ROMIO) splits the accessed range into A equal
file domains, one per aggregator (`cb_nodes` = A): the aggregators do the file I/O, A requests of S/A bytes
at once, and the data moves between aggregators and owners in a shuffle. Per call (ours, from 004 §3):

* two-phase:   T(A) = T_layout(p = A, m = aggregators per node, s = S/A) + max_a T_shuffle(a)
* independent: T_ind = T_layout(p = P, m = ranks per node, s = per-rank bytes)

with T_layout the chosen layout's per-request cost (003 Table 2) and T_shuffle(a) 004 Eq. (1): the
aggregator's slowest message over the intra- or inter-node throughput, plus γ. The application waits for
its slowest aggregator, hence the max. The cheapest A (powers of two, the node count and the server count,
up to P) becomes `cb_nodes`, `cb_buffer_size` covers one domain (one round), and `romio_cb_read/write` say
whether two-phase beats independent I/O for the operations the target does.

For collective reads the shuffle follows the I/O, so the aggregators' acceptable delays (004 Eq. (3)) and
the HIO order of their requests in one server queue (§3.7) are reported beside FIFO (004 Fig. 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pfslayout.costmodel import shuffle
from pfslayout.costmodel.params import CostParams
from pfslayout.costmodel.table import cost
from pfslayout.planner.models import AggregatorCost, CollectiveAdvice, HioSchedule, LayoutName

MAX_CB_BUFFER = 1 << 30  # ROMIO allocates this per aggregator: cap it (more rounds beyond)


@dataclass(frozen=True)
class CollectiveCall:
    """One representative collective call: each rank's [offset, offset + size) and its node."""

    offset: np.ndarray  # int64 per rank
    size: np.ndarray  # int64 per rank
    node: np.ndarray  # node index per rank
    arrival: np.ndarray  # float per rank: when its request reached the file system (FIFO order)
    reads: int
    writes: int

    @staticmethod
    def contiguous(ranks: int, per_rank: int, reads: int, writes: int,
                   node: Sequence[int] | None = None) -> CollectiveCall:
        """Rank r owns [r·s, (r+1)·s) — the layout of a collective call when only sizes are known."""
        idx = np.arange(ranks, dtype=np.int64)
        nodes = np.arange(ranks) if node is None else np.asarray(node)
        return CollectiveCall(idx * per_rank, np.full(ranks, per_rank, dtype=np.int64), nodes,
                              np.zeros(ranks), reads, writes)


def aggregator_ranks(node: np.ndarray, a: int) -> list[int]:
    """ROMIO-like placement: aggregators go round the nodes (one per node first); on a node they are spread
    evenly over its ranks, first and last included (with five ranks and three aggregators: 0, 2, 4)."""
    nodes = sorted(set(node.tolist()))
    per_node = [a // len(nodes) + (1 if i < a % len(nodes) else 0) for i in range(len(nodes))]
    out: list[int] = []
    for k, count in zip(nodes, per_node):
        ranks = np.flatnonzero(node == k)
        if count == 0:
            continue
        if count == 1:
            out.append(int(ranks[0]))
            continue
        picks = np.round(np.arange(count) * (ranks.size - 1) / (count - 1)).astype(int)
        out.extend(int(ranks[i]) for i in picks)
    return sorted(out)


def _shuffles(call: CollectiveCall, aggs: list[int], B_a: float, B_e: float,
              gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Per aggregator its 004 Eq. (1) shuffle cost and its domain's bytes (domains: equal contiguous parts
    of the call's accessed range, in aggregator rank order)."""
    lo = int(call.offset.min())
    hi = int((call.offset + call.size).max())
    edges = lo + (hi - lo) * np.arange(len(aggs) + 1) // len(aggs)
    t = np.zeros(len(aggs))
    for i, a in enumerate(aggs):
        # bytes each rank owns inside this domain: the messages to or from aggregator a
        part = np.clip(np.minimum(call.offset + call.size, edges[i + 1]) - np.maximum(call.offset, edges[i]), 0, None)
        part[a] = 0  # its own data does not move
        same = call.node == call.node[a]
        t[i] = shuffle.shuffle_cost(part[same & (part > 0)].tolist(), part[~same & (part > 0)].tolist(),
                                    B_a, B_e, gamma) if np.any(part > 0) else 0.0
    return t, np.diff(edges)


def advise(call: CollectiveCall, layout: LayoutName, g: int | None, n: int, params: CostParams, variant: str,
           cb_nodes: int | None = None) -> CollectiveAdvice:
    """The two-phase vs independent comparison and the hints for one target's collective calls."""
    # costed with the calls' own mix of operations, as the layout was (a write's e, β and small-write term)
    params = params.mixed(call.reads / (call.reads + call.writes) if call.reads + call.writes else 1.0)
    B_a, B_e, gamma = params.shuffle_values()
    ranks = int(call.size.size)
    nodes = sorted(set(call.node.tolist()))
    per_node = int(np.bincount(np.unique(call.node, return_inverse=True)[1]).max())
    s_rank = float(np.median(call.size))
    gg = g if layout == "2-D" else None

    def io(p: int, m: int, s: float) -> float:
        return float(cost(layout, p, n, min(m, p), s, gg, random=False, params=params, variant=variant).total)

    independent = io(ranks, per_node, s_rank)
    counts = sorted({a for a in [1 << k for k in range(ranks.bit_length())] + [len(nodes), n] if 1 <= a <= ranks})
    if cb_nodes is not None:
        counts = [min(max(cb_nodes, 1), ranks)]
    rows: list[AggregatorCost] = []
    detail: dict[int, tuple[list[int], np.ndarray, np.ndarray]] = {}
    for a in counts:
        aggs = aggregator_ranks(call.node, a)
        sh, dom = _shuffles(call, aggs, B_a, B_e, gamma)
        m = int(np.bincount(np.unique(call.node[aggs], return_inverse=True)[1]).max())
        t_io = io(a, m, float(dom.max()))
        rows.append(AggregatorCost(aggregators=a, io=t_io, shuffle=float(sh.max()), total=t_io + float(sh.max())))
        detail[a] = (aggs, sh, dom)
    best = min(rows, key=lambda r: (r.total, r.aggregators))
    two_phase = best.total < independent
    aggs, sh, dom = detail[best.aggregators]
    mode = "enable" if two_phase else "disable"
    hints: dict[str, str | int] = {}
    if call.reads:
        hints["romio_cb_read"] = mode
    if call.writes:
        hints["romio_cb_write"] = mode
    buffer = 0
    if two_phase:
        buffer = int(min(1 << max(int(dom.max()) - 1, 0).bit_length(), MAX_CB_BUFFER))
        hints["cb_nodes"] = best.aggregators
        hints["cb_buffer_size"] = buffer
    ad = shuffle.acceptable_delay(sh.tolist())
    hio = _hio(call, aggs, sh, dom, params) if call.reads else None
    ops = " and ".join(x for x, k in (("reads", call.reads), ("writes", call.writes)) if k)
    why = (f"collective {ops} of {ranks} ranks ({s_rank:.0f} B each per call): two-phase with cb_nodes="
           f"{best.aggregators} costs {best.total:.6g} s per call (I/O {best.io:.6g} s + slowest shuffle "
           f"{best.shuffle:.6g} s, 004 Eq. (1) with B_a={B_a:.4g} B/s, B_e={B_e:.4g} B/s, γ={gamma:.3g} s) vs "
           f"{independent:.6g} s independent under {layout}; ")
    why += (f"collective buffering on with {best.aggregators} aggregators and a {buffer} B buffer (one domain per "
            "round)." if two_phase else "collective buffering off: each rank's own request is cheaper.")
    if hio is not None:
        why += (f" Reads: the aggregators' acceptable delays (004 Eq. (3)) are {[round(x, 6) for x in ad]} s; "
                f"served FIFO ({', '.join(hio.fifo_order)}) one server ends at {hio.fifo_makespan:.6g} s, in the "
                f"HIO order ({', '.join(hio.hio_order)}) at {hio.hio_makespan:.6g} s.")
    return CollectiveAdvice(ranks=ranks, reads=call.reads, writes=call.writes, per_rank_bytes=round(s_rank),
                            independent=independent, candidates=rows, cb_nodes=best.aggregators if two_phase else None,
                            two_phase=two_phase, hints=hints, aggregator_ranks=aggs,
                            shuffle=[float(x) for x in sh], acceptable_delay=[float(x) for x in ad], hio=hio,
                            explanation=why)


def _hio(call: CollectiveCall, aggs: list[int], sh: np.ndarray, dom: np.ndarray, params: CostParams) -> HioSchedule:
    """One server queue of the aggregators' reads (004 Fig. 3): read time α + d·β per domain (docs/seeds.md
    §6 D6), FIFO = arrival order (the earliest request of the ranks whose data is in the domain)."""
    lo = int(call.offset.min())
    hi = int((call.offset + call.size).max())
    edges = lo + (hi - lo) * np.arange(len(aggs) + 1) // len(aggs)
    arrival = []
    for i in range(len(aggs)):
        inside = (call.offset < edges[i + 1]) & (call.offset + call.size > edges[i])
        arrival.append(float(call.arrival[inside].min()) if np.any(inside) else 0.0)
    ad = shuffle.acceptable_delay(sh.tolist())
    reqs = [shuffle.Request(app=0, read=params.alpha_seq + float(d) * params.beta, shuffle=float(t), ad=float(x),
                            name=f"p{a}") for a, d, t, x in zip(aggs, dom, sh, ad)]
    fifo = [reqs[i] for i in sorted(range(len(reqs)), key=lambda i: (arrival[i], i))]
    hio = shuffle.hio_order(fifo)
    return HioSchedule(fifo_order=[r.name for r in fifo], fifo_makespan=shuffle.serve_makespan(fifo),
                       hio_order=[r.name for r in hio], hio_makespan=shuffle.serve_makespan(hio))
