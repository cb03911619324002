"""Static layout choice per directory / file (003 §4, docs/seeds.md §3.1) and hybrid replica sets (§3.4, §6 B3).

Pure functions: a derived ``Trace`` or a ``WorkloadDescription`` in, a ``Plan`` out.

Candidates are 1-DH, 1-DV and 2-D for every *useful* g: the divisors of n strictly between 1 and n.
g = 1 is 1-DH again and g = n is 1-DV again (their formulas coincide), and g ∤ n is not proposed: OrangeFS
groups would be uneven and the journal and conference tables disagree there (docs/seeds.md §6 A1). Extra g
values can be asked for explicitly; they are costed with the corrected variant's ⌊n/g⌋ parallel width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfslayout.costmodel.fast import Groups, group_requests, layout_totals, per_request_totals
from pfslayout.costmodel.formulas import check_variant
from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.planner.collective import CollectiveCall, advise
from pfslayout.planner.hints import hints_for
from pfslayout.planner.models import (
    CandidateCost,
    Decision,
    HybridRecommendation,
    LayoutName,
    Mode,
    Plan,
    Replica,
    Sharing,
    TargetKind,
    WorkloadDescription,
)
from pfslayout.traces.model import OP_READ, Trace

DEFAULT_DELTA = 0.10
HYBRID_MIN_READ_FRACTION = 0.5  # hybrid replicas suit read-mostly data (docs/seeds.md §6 B2)
MAX_REPLICAS = 3


def useful_groups(n: int) -> list[int]:
    return [g for g in range(2, n) if n % g == 0]


def _groups_note(n: int, groups: list[int], extra: list[int]) -> str:
    base = (f"2-D candidates use the divisors of n={n} strictly between 1 and n ({groups or 'none'}); g=1 equals "
            "1-DH and g=n equals 1-DV; g not dividing n is not proposed (uneven groups)")
    if extra:
        base += f"; also costed on request: g={extra} (⌊n/g⌋ parallel width)"
    return base


def _check_common(n: int, variant: str, delta: float, groups: list[int] | None) -> tuple[list[int], list[int]]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError("--servers", f"must be a positive number of data servers (got {n!r})")
    check_variant(variant)
    if not (np.isfinite(delta) and delta >= 0):
        raise InputError("delta", f"must be a non-negative fraction (got {delta})", "e.g. 0.10 for 10%")
    base = useful_groups(n)
    extra: list[int] = []
    for g in groups or []:
        if not 1 <= g <= n:
            raise InputError("--g", f"must be between 1 and n={n} (got {g})", f"pass a divisor of n={n}")
        if g not in base:
            extra.append(g)
    return base, sorted(set(extra))


def _candidates(n: int, gs: list[int]) -> list[tuple[LayoutName, int | None]]:
    static: list[tuple[LayoutName, int | None]] = [("1-DH", None), ("1-DV", None)]
    return static + [("2-D", g) for g in gs]


def _label(layout: str, g: int | None) -> str:
    return f"2-D(g={g})" if layout == "2-D" else layout


def _cost_groups(groups: Groups, n: int, cands: list[tuple[LayoutName, int | None]], params: CostParams,
                 variant: str) -> list[CandidateCost]:
    out = []
    for layout, g in cands:
        t = layout_totals(layout, groups, n, g, params, variant)
        out.append(CandidateCost(layout=layout, g=g, label=_label(layout, g), T_e=t.T_e, T_x=t.T_x, T_s=t.T_s,
                                 T_rw=t.T_rw, network=t.network, storage=t.storage, total=t.total))
    return out


@dataclass
class _Workload:
    """The planner's view of one target: grouped requests plus what the hints need."""

    target: str
    kind: TargetKind
    sharing: Sharing
    groups: Groups
    sizes: np.ndarray  # per request (for the hybrid per-request minimum)
    requests: int
    nbytes: int
    read_fraction: float
    random_fraction: float
    dominant_size: int
    weights: np.ndarray | None = None  # expected request count per row (workload descriptions)
    files: int | None = None  # files the layout will hold (file per process: one per rank)
    call: CollectiveCall | None = None  # a representative collective call, when the target has any


def _decide(w: _Workload, n: int, params: CostParams, variant: str, delta: float,
            cands: list[tuple[LayoutName, int | None]]) -> Decision:
    costs = _cost_groups(w.groups, n, cands, params, variant)
    ranked = sorted(costs, key=lambda c: c.total)  # stable: ties keep 1-DH, 1-DV, 2-D order
    best = ranked[0]
    margin = None
    if len(ranked) > 1:
        margin = (ranked[1].total - best.total) / best.total if best.total > 0 else 0.0
    hints = hints_for(best.layout, best.g, n, w.sharing, w.dominant_size, params, w.files)
    parts = [f"{c.label}: {c.total:.6g} s (network {c.network:.6g} s, storage {c.storage:.6g} s)" for c in ranked]
    explanation = (f"{w.target}: {w.requests} requests, dominant size {w.dominant_size} B, {w.sharing}; "
                   f"predicted totals under the {variant} model — " + "; ".join(parts) + ". ")
    mode: Mode = "static"
    hybrid = None
    if margin is not None and margin < delta:
        close = [c for c in ranked if c.total <= best.total * (1 + delta)]
        hybrid = _hybrid(w, n, params, variant, close) if w.read_fraction >= HYBRID_MIN_READ_FRACTION else None
        if hybrid is not None:
            mode = "hybrid"
            explanation += (f"The best two are within {delta:.0%} ({margin:.1%}) and requests differ in which is "
                            f"cheapest, so a replica set of {', '.join(r.label for r in hybrid.replicas)} is "
                            f"recommended; the shim routes each request to the cheapest copy (predicted "
                            f"{hybrid.predicted_total:.6g} s vs {best.total:.6g} s static).")
        elif w.read_fraction >= HYBRID_MIN_READ_FRACTION:
            explanation += (f"The best two are within {delta:.0%} ({margin:.1%}) but every request is cheapest "
                            f"under the same layout, so replicas would never be used; {best.label} is kept static.")
        else:
            explanation += (f"The best two are within {delta:.0%} ({margin:.1%}) but only {w.read_fraction:.0%} of "
                            f"requests are reads; replicas suit read-mostly data, so {best.label} is kept static.")
    else:
        gap = f" by {margin:.1%}" if margin is not None else ""
        explanation += f"{best.label} wins{gap}."
    return Decision(target=w.target, kind=w.kind, sharing=w.sharing, requests=w.requests, bytes=w.nbytes,
                    read_fraction=w.read_fraction, random_fraction=w.random_fraction, dominant_size=w.dominant_size,
                    candidates=costs, choice=best.label, choice_layout=best.layout, choice_g=best.g, margin=margin,
                    mode=mode, hints=hints, hybrid=hybrid, explanation=explanation,
                    source="workload" if w.kind == "workload" else "trace")


def _hybrid(w: _Workload, n: int, params: CostParams, variant: str,
            close: list[CandidateCost]) -> HybridRecommendation | None:
    """Pick replicas among the close candidates greedily: start from the best static layout and add the
    copy that lowers Σ_i min_replica T_i the most, up to MAX_REPLICAS. None when no second copy helps
    (e.g. identical requests all prefer one layout: extra copies would never be read)."""
    per = np.vstack([per_request_totals(c.layout, w.groups, w.sizes, n, c.g, params, variant) for c in close])
    weight = w.weights if w.weights is not None else np.ones(per.shape[1])
    chosen = [0]  # close is sorted by total: index 0 is the static best
    cheapest = per[0].copy()
    current = float(cheapest @ weight)
    while len(chosen) < MAX_REPLICAS:
        gains = [(current - float(np.minimum(cheapest, per[i]) @ weight), i)
                 for i in range(len(close)) if i not in chosen]
        if not gains:
            break
        gain, i = max(gains)
        if gain <= current * 1e-9:
            break
        chosen.append(i)
        np.minimum(cheapest, per[i], out=cheapest)
        current = float(cheapest @ weight)
    if len(chosen) < 2:
        return None
    replicas = [Replica(label=close[i].label,
                        suffix="." + close[i].label.lower().replace("(g=", "-g").replace(")", ""),
                        hints=hints_for(close[i].layout, close[i].g, n, w.sharing, w.dominant_size, params,
                                        w.files),
                        total=close[i].total)
                for i in chosen]
    return HybridRecommendation(replicas=replicas, predicted_total=current, storage_factor=len(replicas),
                                reason="best layouts within delta of each other on read-mostly, mixed requests "
                                       "(docs/seeds.md §6 B3); each request goes to the cheapest copy, "
                                       "writes sync lazily")


def _plan(workloads: list[_Workload], n: int, params: CostParams, variant: str, delta: float,
          base: list[int], extra: list[int], cb_nodes: int | None = None) -> Plan:
    cands = _candidates(n, base + extra)
    decisions = [_decide(w, n, params, variant, delta, cands) for w in workloads]
    for w, d in zip(workloads, decisions):
        if w.call is not None:  # collective calls: the hints that go with the layout (seed 004)
            d.collective = advise(w.call, d.choice_layout, d.choice_g, n, params, variant, cb_nodes)
            d.explanation += " " + d.collective.explanation
    return Plan(servers=n, variant=variant, params=params.scalars(), heterogeneous=params.heterogeneous,
                delta=delta, groups_considered=base + extra, groups_note=_groups_note(n, base, extra),
                decisions=decisions)


def _trace_workload(trace: Trace, sel: np.ndarray, target: str, kind: TargetKind, shared: bool) -> _Workload:
    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    size = trace.size[sel]
    rnd = ~trace.sequential[sel]
    groups = group_requests(trace.p[sel], trace.m[sel], size, rnd, with_key=True)
    sharing: Sharing = "shared" if shared else "file-per-process"
    vals, counts = np.unique(size, return_counts=True)
    dominant = int(vals[np.lexsort((vals, counts))[-1]]) if vals.size else 0
    return _Workload(target=target, kind=kind, sharing=sharing, groups=groups, sizes=size.astype(np.float64),
                     requests=int(size.size), nbytes=int(size.sum()),
                     read_fraction=float(np.mean(trace.op[sel] == OP_READ)) if size.size else 0.0,
                     random_fraction=float(np.mean(rnd)) if size.size else 0.0, dominant_size=dominant)


def _target_workloads(trace: Trace, fid: np.ndarray, keys: list[str], kind: TargetKind,
                      ranks_per_file: np.ndarray) -> list[_Workload]:
    """Split the requests by target (one sort, no per-target scan of the trace) into workloads."""
    targets, target_of_file = np.unique(np.array(keys, dtype=str), return_inverse=True)
    target_req = target_of_file[fid]
    order = np.argsort(target_req, kind="stable")
    bounds = np.searchsorted(target_req[order], np.arange(targets.size + 1))
    out = []
    for t in range(targets.size):
        sel = order[bounds[t]:bounds[t + 1]]
        if sel.size == 0:
            continue
        in_target = target_of_file == t
        w = _trace_workload(trace, sel, str(targets[t]), kind, bool(np.any(ranks_per_file[in_target] > 1)))
        w.files = int(np.count_nonzero(ranks_per_file[in_target]))
        w.call = collective_call(trace, sel)
        out.append(w)
    return out


def collective_call(trace: Trace, sel: np.ndarray) -> CollectiveCall | None:
    """The target's first collective call: each rank's earliest collective request (its offset, size, node
    and start), or None without collective requests."""
    if trace.collective is None:
        return None
    coll = sel[trace.collective[sel]]
    if coll.size == 0:
        return None
    order = coll[np.lexsort((trace.start[coll], trace.rank[coll]))]
    first = order[np.r_[True, trace.rank[order][1:] != trace.rank[order][:-1]]]
    ranks = trace.rank[first].astype(np.int64)
    node = (trace.node_of_rank[ranks].astype(np.int64) if trace.node_of_rank is not None
            and int(ranks.max()) < trace.node_of_rank.size else ranks)
    ops = trace.op[coll]
    return CollectiveCall(offset=trace.offset[first].astype(np.int64), size=trace.size[first].astype(np.int64),
                          node=node, arrival=trace.start[first].astype(np.float64),
                          reads=int(np.count_nonzero(ops == OP_READ)), writes=int(np.count_nonzero(ops != OP_READ)))


def plan_trace(trace: Trace, n: int, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
               delta: float = DEFAULT_DELTA, per: str = "directory", groups: list[int] | None = None,
               cb_nodes: int | None = None) -> Plan:
    """One decision per directory (the unit OrangeFS hints apply to), per file (``per='file'``), or
    both (``per='both'``: the directory decisions, then one per file)."""
    base, extra = _check_common(n, variant, delta, groups)
    if len(trace) == 0:
        raise InputError("--trace", "holds no I/O requests", "trace a run that reads or writes data")
    if not trace.derived:
        raise InputError("--trace", "p, m and sequential are not derived",
                         "load it with pfslayout.traces.load_trace (or call traces.derive)")
    assert trace.p is not None and trace.m is not None  # what `derived` checked, for the type checker
    if np.any(trace.p < 1) or np.any(trace.m < 1) or np.any(trace.m > trace.p):
        raise InputError("--trace", "derived p/m are inconsistent (need 1 <= m <= p)")
    if np.any(trace.size < 0):
        raise InputError("--trace", "has a negative request size")
    if per not in ("directory", "file", "both"):
        raise InputError("per", f"unknown grouping {per!r}", "use directory, file or both")
    n_files = max(len(trace.files), int(trace.file_id.max()) + 1)
    names = [trace.files[i] if i < len(trace.files) else f"<file {i}>" for i in range(n_files)]
    dirs = [(name.rsplit("/", 1)[0] or "/") if "/" in name else "." for name in names]
    # a file is shared when more than one rank touches it
    fid = trace.file_id.astype(np.int64)
    width = int(trace.rank.max()) + 1
    ranks_per_file = np.bincount(np.unique(fid * width + trace.rank) // width, minlength=n_files)
    workloads = []
    if per in ("directory", "both"):
        workloads += _target_workloads(trace, fid, dirs, "directory", ranks_per_file)
    if per in ("file", "both"):
        workloads += _target_workloads(trace, fid, names, "file", ranks_per_file)
    return _plan(workloads, n, params, variant, delta, base, extra, cb_nodes)


def weighted_workload(target: str, kind: TargetKind, sharing: Sharing, p: np.ndarray, m: np.ndarray,
                      size: np.ndarray, random: np.ndarray, weight: np.ndarray, *, read_fraction: float,
                      files: int | None) -> _Workload:
    """A workload of weighted request rows (p, m, size, random, expected count): what a workload
    description expands to, and what a trace summary keeps of a trace (planner/summary.py)."""
    keep = weight > 0
    rows_p, rows_m = np.asarray(p)[keep], np.asarray(m)[keep]
    rows_s, rows_r, rows_w = np.asarray(size, np.float64)[keep], np.asarray(random, bool)[keep], weight[keep]
    g = group_requests(rows_p, rows_m, rows_s, rows_r, with_key=True)
    # Weighted counts: rebuild the groups with expected (fractional) counts and bytes.
    idx = g.index()
    count = np.bincount(idx, weights=rows_w, minlength=len(g))
    nbytes = np.bincount(idx, weights=rows_w * rows_s, minlength=len(g))
    groups = Groups(p=g.p, m=g.m, random=g.random, count=count, bytes=nbytes, key=g.key, dense=g.dense,
                    dense_size=g.dense_size)
    by_size: dict[float, float] = {}
    for sz, w in zip(rows_s.tolist(), rows_w.tolist()):
        by_size[sz] = by_size.get(sz, 0.0) + w
    dominant = int(max(by_size.items(), key=lambda kv: (kv[1], kv[0]))[0]) if by_size else 0
    total = float(rows_w.sum())
    return _Workload(target=target, kind=kind, sharing=sharing, groups=groups, sizes=rows_s,
                     requests=round(total), nbytes=round(float((rows_w * rows_s).sum())),
                     read_fraction=read_fraction,
                     random_fraction=float((rows_w * rows_r).sum() / total) if total > 0 else 0.0,
                     dominant_size=dominant, weights=rows_w, files=files)


def _workload_from_description(desc: WorkloadDescription) -> _Workload:
    sizes = np.array([b.size for b in desc.request_sizes], dtype=np.float64)
    weights = np.array([b.weight for b in desc.request_sizes], dtype=np.float64)
    share = weights / weights.sum()
    reqs = desc.processes * desc.requests_per_process
    # Expected counts: every size row twice (sequential and random share), weighted.
    rf = desc.random_fraction
    rows_s = np.concatenate([sizes, sizes])
    rows_r = np.concatenate([np.zeros(sizes.size, bool), np.ones(sizes.size, bool)])
    rows_w = np.concatenate([share * (1 - rf), share * rf]) * reqs
    w = weighted_workload(desc.name, "workload", desc.sharing, np.full(rows_s.size, desc.processes),
                          np.full(rows_s.size, desc.procs_per_node), rows_s, rows_r, rows_w,
                          read_fraction=desc.read_fraction,
                          files=desc.processes if desc.sharing == "file-per-process" else 1)
    # the description's own figures (exact, not re-derived from the rows)
    w.requests, w.random_fraction = reqs, rf
    w.nbytes = round(float((share * sizes).sum() * reqs))
    w.dominant_size = int(sizes[np.lexsort((sizes, weights))[-1]])
    return w


def plan_workloads(workloads: list[_Workload], n: int, params: CostParams = SEED_ETHERNET,
                   variant: str = "corrected", delta: float = DEFAULT_DELTA) -> Plan:
    """One decision per prepared workload (`weighted_workload`)."""
    base, extra = _check_common(n, variant, delta, None)
    return _plan(workloads, n, params, variant, delta, base, extra)


def plan_workload(descs: WorkloadDescription | list[WorkloadDescription], n: int,
                  params: CostParams = SEED_ETHERNET, variant: str = "corrected", delta: float = DEFAULT_DELTA,
                  groups: list[int] | None = None) -> Plan:
    """One decision per described workload (costs are expected totals over its requests)."""
    base, extra = _check_common(n, variant, delta, groups)
    items = descs if isinstance(descs, list) else [descs]
    if not items:
        raise InputError("workloads", "is empty", "describe at least one workload")
    return _plan([_workload_from_description(d) for d in items], n, params, variant, delta, base, extra)
