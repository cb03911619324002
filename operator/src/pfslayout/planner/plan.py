"""Static layout choice per directory / file (003 §4, docs/seeds.md §3.1) and hybrid replica sets (§3.4, §6 B3).

Pure functions: a derived ``Trace`` or a ``WorkloadDescription`` in, a ``Plan`` out.

Candidates are 1-DH, 1-DV and 2-D for every *useful* g: the divisors of n strictly between 1 and n.
g = 1 is 1-DH again and g = n is 1-DV again (their formulas coincide), and g ∤ n is not proposed: OrangeFS
groups would be uneven and the journal and conference tables disagree there (docs/seeds.md §6 A1). Extra g
values can be asked for explicitly; they are costed with the corrected variant's ⌊n/g⌋ parallel width.

Two refinements (issue 13, docs/cost-model.md): each candidate is costed as the layout it *behaves* as once
its hints realise it at the target's dominant request size (``classify.realised_as``: 1-DH of 4 KiB
requests on 4 servers puts each on one server, so it costs what 1-DV costs), and with per-operation
parameters each target is costed with e and β mixed by its read fraction (``CostParams.mixed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from pfslayout.costmodel.fast import (
    Groups,
    Totals,
    group_requests,
    layout_totals,
    layout_totals_many,
    per_request_totals,
)
from pfslayout.costmodel.formulas import check_variant
from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.planner.classify import realised_as
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


Candidate = tuple[LayoutName, int | None]


UNIFORM_SIZES = 0.01  # a target whose mean request is within 1% of its dominant size has one size


def _realised(w: _Workload, n: int, cands: list[Candidate], variant: str) -> dict[Candidate, Candidate]:
    """Each candidate → the (layout, g) its requests behave as, realised at the target's dominant size.

    Only for the corrected variant (``printed`` is 003's table as printed) and only when the target's
    requests have one size: a 4 KiB strip that puts 4 KiB requests on one server still spreads the same
    file's 64 MiB requests over every server, and the grouped costing has no per-request sizes to tell
    them apart (per-request realisation is noted as future work in docs/cost-model.md)."""
    same = {c: c for c in cands}
    if variant != "corrected" or w.requests == 0 or w.dominant_size <= 0:
        return same
    if abs(w.nbytes / w.requests - w.dominant_size) > UNIFORM_SIZES * w.dominant_size:
        return same
    return {c: realised_as(c[0], c[1], n, w.sharing, w.dominant_size) for c in cands}


def _candidate(layout: LayoutName, g: int | None, t: Totals) -> CandidateCost:
    return CandidateCost(layout=layout, g=g, label=_label(layout, g), T_e=t.T_e, T_x=t.T_x, T_s=t.T_s,
                         T_rw=t.T_rw, network=t.network, storage=t.storage, total=t.total)


def _cost_groups(groups: Groups, n: int, cands: list[Candidate], params: CostParams, variant: str,
                 realised: dict[Candidate, Candidate] | None = None) -> list[CandidateCost]:
    out = []
    for layout, g in cands:
        as_layout, as_g = realised[(layout, g)] if realised else (layout, g)
        out.append(_candidate(layout, g, layout_totals(as_layout, groups, n, as_g, params, variant)))
    return out


def _cost_many(sets: list[Groups], n: int, cands: list[Candidate], params: list[CostParams],
               variant: str, realised: list[dict[Candidate, Candidate]]) -> list[list[CandidateCost]]:
    """``_cost_groups`` of many targets at once, the same floats (``layout_totals_many``): the coefficients
    once per distinct (p, m, random) of all targets' groups, then each target's dot products."""
    if not sets:
        return []
    sizes = [len(gr) for gr in sets]
    p = np.concatenate([gr.p for gr in sets])
    m = np.concatenate([gr.m for gr in sets])
    rnd = np.concatenate([gr.random for gr in sets])
    count = np.concatenate([gr.count for gr in sets])
    nbytes = np.concatenate([gr.bytes for gr in sets])
    # the distinct rows are group_requests' groups of the groups (the weights are not used), and its keys
    # give each group's row: through a lookup table when they are slots of its dense (p, m, random) table
    # (Groups.index() would binary-search every key)
    distinct = group_requests(p, m, count, rnd, with_key=True)
    rows = Groups(p=distinct.p, m=distinct.m, random=distinct.random, count=distinct.count, bytes=distinct.bytes,
                  key=None)
    assert distinct.key is not None
    row_of = distinct.key
    if distinct.dense is not None:
        lookup = np.empty(distinct.dense_size, dtype=np.intp)
        lookup[distinct.dense] = np.arange(len(distinct))
        row_of = lookup[distinct.key]
    # every (layout, g) some target's candidates are realised as, costed once for all targets
    needed = sorted({r for per_set in realised for r in per_set.values()}, key=lambda c: (c[0], c[1] or 0))
    totals = {(layout, g): layout_totals_many(layout, rows, row_of, count, nbytes, sizes, n, g, params, variant)
              for layout, g in needed}
    return [[_candidate(layout, g, totals[realised[i][(layout, g)]][i]) for layout, g in cands]
            for i in range(len(sets))]


@dataclass
class _Workload:
    """The planner's view of one target: grouped requests plus what the hints need."""

    target: str
    kind: TargetKind
    sharing: Sharing
    groups: Groups  # with per-request keys, unless ``expand`` builds them
    sizes: np.ndarray | None  # per request (for the hybrid per-request minimum); None: ``expand`` builds them
    requests: int
    nbytes: int
    read_fraction: float
    random_fraction: float
    dominant_size: int
    weights: np.ndarray | None = None  # expected request count per row (workload descriptions)
    files: int | None = None  # files the layout will hold (file per process: one per rank)
    call: CollectiveCall | None = None  # a representative collective call, when the target has any
    writes: np.ndarray | None = None  # per request 1.0 for a write (traces); None: each is one by 1 − read_fraction
    # the fast trace path keeps no per-request data: this builds (groups with keys, sizes, writes) on demand
    expand: Callable[[], tuple[Groups, np.ndarray, np.ndarray]] | None = None

    def per_request(self) -> tuple[Groups, np.ndarray, np.ndarray]:
        """Groups with each request's key, the request sizes and each request's chance of being a write:
        what hybrid routing costs per request."""
        if self.expand is not None:
            return self.expand()
        assert self.sizes is not None and self.groups.key is not None
        writes = self.writes if self.writes is not None else np.full(self.sizes.shape[0], 1.0 - self.read_fraction)
        return self.groups, self.sizes, writes


def _decide(w: _Workload, n: int, params: CostParams, variant: str, delta: float,
            cands: list[Candidate], costs: list[CandidateCost] | None = None) -> Decision:
    """``params`` as given (hints, per-server strips); costs use ``params.mixed`` by the read fraction."""
    realised = _realised(w, n, cands, variant)
    if costs is None:
        costs = _cost_groups(w.groups, n, cands, params.mixed(w.read_fraction), variant, realised)
    # stable: ties keep 1-DH, 1-DV, 2-D order — except that a layout realised as another candidate loses a
    # tie to that candidate (1-DH of 1000 B requests is 1-DV with more datafiles: choose 1-DV itself)
    ranked = sorted(costs, key=lambda c: (c.total, realised[(c.layout, c.g)] != (c.layout, c.g)))
    best = ranked[0]
    margin = None
    if len(ranked) > 1:
        margin = (ranked[1].total - best.total) / best.total if best.total > 0 else 0.0
    hints = hints_for(best.layout, best.g, n, w.sharing, w.dominant_size, params, w.files)
    parts = [f"{c.label}: {c.total:.6g} s (network {c.network:.6g} s, storage {c.storage:.6g} s)" for c in ranked]
    explanation = (f"{w.target}: {w.requests} requests, dominant size {w.dominant_size} B, {w.sharing}; "
                   f"predicted totals under the {variant} model — " + "; ".join(parts) + ". ")
    moved = [f"{_label(*c)} as {_label(*r)}" for c, r in realised.items() if r != c]
    if moved:
        explanation += (f"Realised at {w.dominant_size} B (strips of at least 4 KiB), a request touches fewer "
                        f"servers than its layout spans, so these are costed as what they behave as: "
                        f"{', '.join(moved)}. ")
    if params.per_op:
        explanation += f"Reads and writes costed apart ({w.read_fraction:.0%} reads). "
    mode: Mode = "static"
    hybrid = None
    if margin is not None and margin < delta:
        close = [c for c in ranked if c.total <= best.total * (1 + delta)]
        hybrid = _hybrid(w, n, params, variant, close, realised) if w.read_fraction >= HYBRID_MIN_READ_FRACTION \
            else None
        if hybrid is not None:
            mode = "hybrid"
            explanation += (f"The best two are within {delta:.0%} ({margin:.1%}) and requests differ in which is "
                            f"cheapest, so a replica set of {', '.join(r.label for r in hybrid.replicas)} is "
                            f"recommended; the shim routes each request to the cheapest copy (predicted "
                            f"{hybrid.predicted_total:.6g} s vs {best.total:.6g} s static).")
        elif w.read_fraction >= HYBRID_MIN_READ_FRACTION:
            explanation += (f"The best two are within {delta:.0%} ({margin:.1%}) but no replica set is cheaper "
                            f"than {best.label} alone: the reads would not use a second copy enough to pay for "
                            f"writing every copy ({1 - w.read_fraction:.0%} writes); {best.label} is kept static.")
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


def _hybrid(w: _Workload, n: int, params: CostParams, variant: str, close: list[CandidateCost],
            realised: dict[Candidate, Candidate]) -> HybridRecommendation | None:
    """Pick replicas among the close candidates greedily: start from the best static layout and add the
    copy that lowers the set's cost the most, up to MAX_REPLICAS. A read costs the min over the copies,
    a write the sum — every copy is written (the lab measured the copies' writes adding up: they share
    the servers' links, docs/results.md "Hybrid replicas"); a trace says which requests write, a
    description only its read fraction. So a copy is added only when what the reads save exceeds what
    keeping it in sync costs. None when no second copy helps (identical requests all prefer one layout,
    or the writes outweigh the reads' gain)."""
    groups, sizes, writes = w.per_request()
    mixed = params.mixed(w.read_fraction)
    per = np.vstack([per_request_totals(layout, groups, sizes, n, g, mixed, variant)
                     for layout, g in (realised[(c.layout, c.g)] for c in close)])
    weight = w.weights if w.weights is not None else np.ones(per.shape[1])
    chosen = [0]  # close is sorted by total: index 0 is the static best
    cheapest = per[0].copy()
    written = per[0].copy()  # Σ over the chosen copies: what a write costs

    def cost(cheap: np.ndarray, every: np.ndarray) -> float:
        # a trace knows each request's operation; a description or summary, only the read fraction
        return float(((1 - writes) * cheap + writes * every) @ weight)

    current = cost(cheapest, written)
    while len(chosen) < MAX_REPLICAS:
        gains = [(current - cost(np.minimum(cheapest, per[i]), written + per[i]), i)
                 for i in range(len(close)) if i not in chosen]
        if not gains:
            break
        gain, i = max(gains)
        if gain <= current * 1e-9:
            break
        chosen.append(i)
        np.minimum(cheapest, per[i], out=cheapest)
        written += per[i]
        current = cost(cheapest, written)
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
                                       "(docs/seeds.md §6 B3); each read goes to the cheapest copy, each write "
                                       "to every copy (its cost counted in the prediction)")


def _plan(workloads: list[_Workload], n: int, params: CostParams, variant: str, delta: float,
          base: list[int], extra: list[int], cb_nodes: int | None = None, batched: bool = False) -> Plan:
    """``batched``: cost every workload's candidates in one ``layout_totals_many`` call per candidate (the
    fast trace path, where per-file plans have hundreds of targets), else one ``layout_totals`` each."""
    cands = _candidates(n, base + extra)
    costs: list[list[CandidateCost] | None] = (
        [*_cost_many([w.groups for w in workloads], n, cands, [params.mixed(w.read_fraction) for w in workloads],
                     variant, [_realised(w, n, cands, variant) for w in workloads])] if batched
        else [None] * len(workloads))
    decisions = [_decide(w, n, params, variant, delta, cands, c) for w, c in zip(workloads, costs)]
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
                     random_fraction=float(np.mean(rnd)) if size.size else 0.0, dominant_size=dominant,
                     writes=(trace.op[sel] != OP_READ).astype(np.float64))


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


def _inconsistent_pm() -> InputError:
    return InputError("--trace", "derived p/m are inconsistent (need 1 <= m <= p)")


def _negative_size() -> InputError:
    return InputError("--trace", "has a negative request size")


def _unknown_per(per: str) -> InputError:
    return InputError("per", f"unknown grouping {per!r}", "use directory, file or both")


def _target_names(trace: Trace, n_files: int) -> tuple[list[str], list[str]]:
    """Each file id's name (ids beyond ``trace.files`` named ``<file i>``) and directory."""
    names = [trace.files[i] if i < len(trace.files) else f"<file {i}>" for i in range(n_files)]
    dirs = [(name.rsplit("/", 1)[0] or "/") if "/" in name else "." for name in names]
    return names, dirs


def _kinds(per: str, names: list[str], dirs: list[str]) -> list[tuple[list[str], TargetKind]]:
    out: list[tuple[list[str], TargetKind]] = []
    if per in ("directory", "both"):
        out.append((dirs, "directory"))
    if per in ("file", "both"):
        out.append((names, "file"))
    return out


def plan_trace(trace: Trace, n: int, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
               delta: float = DEFAULT_DELTA, per: str = "directory", groups: list[int] | None = None,
               cb_nodes: int | None = None, *, method: str = "fast") -> Plan:
    """One decision per directory (the unit OrangeFS hints apply to), per file (``per='file'``), or
    both (``per='both'``: the directory decisions, then one per file).

    ``method``: ``fast`` (default: per-target aggregates from linear numba passes, ``_fast_workloads``) or
    ``reference`` (the original per-target numpy code, kept to test against) — the plans are identical."""
    if method not in ("fast", "reference"):
        raise InputError("method", f"unknown plan method {method!r}", "use fast or reference")
    base, extra = _check_common(n, variant, delta, groups)
    if len(trace) == 0:
        raise InputError("--trace", "holds no I/O requests", "trace a run that reads or writes data")
    if not trace.derived:
        raise InputError("--trace", "p, m and sequential are not derived",
                         "load it with pfslayout.traces.load_trace (or call traces.derive)")
    if method == "fast" and _fast_path_applies(trace):
        fast = _fast_workloads(trace, per)
        if fast is not None:
            return _plan(fast, n, params, variant, delta, base, extra, cb_nodes, batched=True)
    assert trace.p is not None and trace.m is not None  # what `derived` checked, for the type checker
    if np.any(trace.p < 1) or np.any(trace.m < 1) or np.any(trace.m > trace.p):
        raise _inconsistent_pm()
    if np.any(trace.size < 0):
        raise _negative_size()
    if per not in ("directory", "file", "both"):
        raise _unknown_per(per)
    n_files = max(len(trace.files), int(trace.file_id.max()) + 1)
    names, dirs = _target_names(trace, n_files)
    # a file is shared when more than one rank touches it
    fid = trace.file_id.astype(np.int64)
    width = int(trace.rank.max()) + 1
    ranks_per_file = np.bincount(np.unique(fid * width + trace.rank) // width, minlength=n_files)
    workloads = []
    for keys, kind in _kinds(per, names, dirs):
        workloads += _target_workloads(trace, fid, keys, kind, ranks_per_file)
    return _plan(workloads, n, params, variant, delta, base, extra, cb_nodes)


# ---- the fast path: per-target aggregates from numba passes (planner/jit_targets.py) -------------------

_KEY_LIMIT = 1 << 62  # table keys the passes build stay below this (no int64 overflow)


def _fast_path_applies(trace: Trace) -> bool:
    """Columns the numba passes read as they are: one-dimensional, one entry per request, signed integer
    ids, p, m and sizes, boolean flags. Anything else is left to the reference (which defines it)."""
    n = len(trace)
    cols = [trace.rank, trace.op, trace.size, trace.file_id, trace.p, trace.m, trace.sequential]
    if trace.collective is not None:
        cols.append(trace.collective)
    if not all(isinstance(c, np.ndarray) and c.ndim == 1 and c.shape[0] == n for c in cols):
        return False
    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    return (all(c.dtype.kind == "i" for c in (trace.rank, trace.size, trace.file_id, trace.p, trace.m))
            and trace.op.dtype.kind in "iu" and trace.sequential.dtype == np.bool_
            and (trace.collective is None or trace.collective.dtype == np.bool_))


class _RequestOrder:
    """The requests sorted by target (stable), for one target kind at a time: per-request data of a target
    (its collective call, hybrid routing) is gathered through it. Held for one kind only, so at most one
    int32 array of N is alive; switching kinds releases it before sorting again."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.kind: int | None = None
        self.order: np.ndarray | None = None
        self.start: np.ndarray | None = None

    def keep(self, kind: int, order: np.ndarray, start: np.ndarray) -> None:
        self.kind, self.order, self.start = kind, order, start

    def release(self) -> None:
        self.kind = self.order = self.start = None

    def select(self, kind: int, target_of_file: np.ndarray, n_targets: int, t: int) -> np.ndarray:
        """Target t's request indices, ascending (what the reference's stable argsort gives it)."""
        if self.kind != kind or self.order is None or self.start is None:
            from pfslayout.planner import jit_targets

            self.release()
            order = np.empty(len(self.trace), dtype=_index_dtype(len(self.trace)))
            self.keep(kind, order, jit_targets.order_by_target(self.trace.file_id, target_of_file, n_targets, order))
        assert self.order is not None and self.start is not None
        return self.order[self.start[t]:self.start[t + 1]]


def _index_dtype(n: int) -> type[np.signedinteger]:
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


def _expand(trace: Trace, requests: _RequestOrder, kind: int, target_of_file: np.ndarray, n_targets: int,
            t: int) -> tuple[Groups, np.ndarray, np.ndarray]:
    """Target t's groups with per-request keys, its request sizes and which are writes, as the reference
    builds them."""
    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    sel = requests.select(kind, target_of_file, n_targets, t)
    size = trace.size[sel]
    groups = group_requests(trace.p[sel], trace.m[sel], size, ~trace.sequential[sel], with_key=True)
    return groups, size.astype(np.float64), (trace.op[sel] != OP_READ).astype(np.float64)


def _fast_workloads(trace: Trace, per: str) -> list[_Workload] | None:
    """The reference's workloads (same targets, groups, counts and floats) from per-target aggregates;
    None for inputs the reference defines (negative ids or ranks, p ≥ 2^30, keys that would overflow).
    Raises the reference's input errors, in its order."""
    from pfslayout.planner import jit_targets

    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    bounds = jit_targets.trace_bounds(trace.p, trace.m, trace.size, trace.file_id, trace.rank)
    pmin, pmax, mmin, mmax, m_over_p, smin, smax, fmin, fmax, rmin = (int(b) for b in bounds)
    if pmin < 1 or mmin < 1 or m_over_p:
        raise _inconsistent_pm()
    if smin < 0:
        raise _negative_size()
    if per not in ("directory", "file", "both"):
        raise _unknown_per(per)
    if fmin < 0 or rmin < 0 or pmax >= 1 << 30:
        return None
    n_files = max(len(trace.files), fmax + 1)
    names, dirs = _target_names(trace, n_files)
    width = mmax + 1
    n_slots = (pmax + 1) * width * 2
    N = len(trace)
    has_collective = trace.collective is not None
    collective = trace.collective if trace.collective is not None else np.zeros(1, dtype=np.bool_)
    first_rank = np.full(n_files, -1, dtype=np.int64)  # per file: its first rank, and whether another
    multi_rank = np.zeros(n_files, dtype=np.bool_)
    requests = _RequestOrder(trace)
    out: list[_Workload] = []
    for k, (keys, kind) in enumerate(_kinds(per, names, dirs)):
        targets, target_of_file = np.unique(np.array(keys, dtype=str), return_inverse=True)
        target_of_file = target_of_file.astype(np.int64, copy=False)
        nt = int(targets.size)
        args = (trace.file_id, trace.p, trace.m, trace.sequential, trace.size, trace.op, OP_READ, collective,
                has_collective, trace.rank, target_of_file, nt, width, n_slots, k == 0, first_rank, multi_rank)
        if nt * n_slots <= jit_targets.DENSE_LIMIT and (smax + 1) * 4 * nt < _KEY_LIMIT:
            reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt = jit_targets.aggregate_dense(*args)
        elif (smax + 1) * 4 < _KEY_LIMIT:
            requests.release()  # one int32 array of N at a time
            order = np.empty(N, dtype=_index_dtype(N))
            start, reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt = jit_targets.aggregate_sorted(
                *args, n_slots <= jit_targets.SLOT_LIMIT, order)
            requests.keep(k, order, start)
        else:
            return None
        out += _kind_workloads(trace, kind, k, [str(x) for x in targets], target_of_file, width, requests,
                               first_rank, multi_rank, reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt)
    return out


def _kind_workloads(trace: Trace, kind: TargetKind, k: int, targets: list[str], target_of_file: np.ndarray,
                    width: int, requests: _RequestOrder, first_rank: np.ndarray, multi_rank: np.ndarray,
                    reads: np.ndarray, nbytes: np.ndarray, ncoll: np.ndarray, dominant: np.ndarray, g_t: np.ndarray,
                    g_slot: np.ndarray, g_cnt: np.ndarray, g_byt: np.ndarray) -> list[_Workload]:
    """One kind's workloads from the aggregates: groups sorted by (target, p, m, random), per-target
    figures, per-file ranks."""
    nt = len(targets)
    bounds = np.searchsorted(g_t, np.arange(nt + 1))
    gp, gm = np.divmod(g_slot >> 1, width)
    grnd = (g_slot & 1).astype(np.bool_)
    csum = np.concatenate(([0], np.cumsum(g_cnt)))
    rsum = np.concatenate(([0], np.cumsum(np.where(grnd, g_cnt, 0))))
    requests_t = (csum[bounds[1:]] - csum[bounds[:-1]]).tolist()
    randoms_t = (rsum[bounds[1:]] - rsum[bounds[:-1]]).tolist()
    files_t = np.bincount(target_of_file[first_rank >= 0], minlength=nt).tolist()
    shared_t = (np.bincount(target_of_file[multi_rank], minlength=nt) > 0).tolist()
    reads_l, nbytes_l, ncoll_l, dominant_l = reads.tolist(), nbytes.tolist(), ncoll.tolist(), dominant.tolist()
    out = []
    for t in range(nt):
        req = requests_t[t]
        if req == 0:
            continue
        lo, hi = bounds[t], bounds[t + 1]
        groups = Groups(p=gp[lo:hi], m=gm[lo:hi], random=grnd[lo:hi], count=g_cnt[lo:hi], bytes=g_byt[lo:hi], key=None)
        w = _Workload(target=targets[t], kind=kind, sharing="shared" if shared_t[t] else "file-per-process",
                      groups=groups, sizes=None, requests=req, nbytes=nbytes_l[t], read_fraction=reads_l[t] / req,
                      random_fraction=randoms_t[t] / req, dominant_size=dominant_l[t], files=files_t[t],
                      expand=partial(_expand, trace, requests, k, target_of_file, nt, t))
        if ncoll_l[t]:
            w.call = collective_call(trace, requests.select(k, target_of_file, nt, t))
        out.append(w)
    return out


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
