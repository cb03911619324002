"""Static layout choice per target (003 §4, docs/seeds.md §3.1) and hybrid replica sets (§3.4, §6 B3).

Pure: ``Workload``s in (``planner.target``), a ``Plan`` out. The cheapest candidate (``planner.candidates``)
wins; when the best two are within ``delta`` of each other on read-mostly data, a replica set is
recommended if routing each request to its cheapest copy beats the best layout alone; targets with
collective calls also get collective-buffering hints (``planner.collective``).
"""

from __future__ import annotations

import numpy as np

from pfslayout.costmodel.fast import per_request_totals
from pfslayout.costmodel.params import CostParams
from pfslayout.planner.candidates import (
    Candidate,
    candidate_label,
    candidate_set,
    cost_groups,
    cost_many,
    groups_note,
    realisations,
)
from pfslayout.planner.collective import advise
from pfslayout.planner.hints import hints_for
from pfslayout.planner.models import CandidateCost, Decision, HybridRecommendation, Mode, Plan, Replica
from pfslayout.planner.target import Workload

DEFAULT_DELTA = 0.10
HYBRID_MIN_READ_FRACTION = 0.5  # hybrid replicas suit read-mostly data (docs/seeds.md §6 B2)
MAX_REPLICAS = 3


def plan_targets(workloads: list[Workload], n: int, params: CostParams, variant: str, delta: float,
                 base: list[int], extra: list[int], cb_nodes: int | None = None, batched: bool = False) -> Plan:
    """One decision per workload, over the candidates of g in ``base`` (the useful ones) and ``extra``.

    ``batched``: cost every workload's candidates in one ``layout_totals_many`` call per candidate (the
    fast trace path, where per-file plans have hundreds of targets), else one ``layout_totals`` each."""
    cands = candidate_set(n, base + extra)
    costs: list[list[CandidateCost] | None] = (
        [*cost_many([w.groups for w in workloads], n, cands, [params.mixed(w.read_fraction) for w in workloads],
                    variant, [realisations(w, n, cands, variant) for w in workloads])] if batched
        else [None] * len(workloads))
    decisions = [decide(w, n, params, variant, delta, cands, c) for w, c in zip(workloads, costs)]
    for w, d in zip(workloads, decisions):
        if w.call is not None:  # collective calls: the hints that go with the layout (seed 004)
            d.collective = advise(w.call, d.choice_layout, d.choice_g, n, params, variant, cb_nodes)
            d.explanation += " " + d.collective.explanation
    return Plan(servers=n, variant=variant, params=params.scalars() | ({"overlap": True} if params.overlap else {}),
                heterogeneous=params.heterogeneous,
                delta=delta, groups_considered=base + extra, groups_note=groups_note(n, base, extra),
                decisions=decisions)


def decide(w: Workload, n: int, params: CostParams, variant: str, delta: float,
           cands: list[Candidate], costs: list[CandidateCost] | None = None) -> Decision:
    """``params`` as given (hints, per-server strips); costs use ``params.mixed`` by the read fraction."""
    realised = realisations(w, n, cands, variant)
    if costs is None:
        costs = cost_groups(w.groups, n, cands, params.mixed(w.read_fraction), variant, realised)
    # stable: ties keep 1-DH, 1-DV, 2-D order — except that a layout realised as another candidate loses a
    # tie to that candidate (1-DH of 1000 B requests is 1-DV with more datafiles: choose 1-DV itself)
    ranked = sorted(costs, key=lambda c: (c.total, realised[(c.layout, c.g)] != (c.layout, c.g)))
    best = ranked[0]
    margin = None
    if len(ranked) > 1:
        margin = (ranked[1].total - best.total) / best.total if best.total > 0 else 0.0
    hints = hints_for(best.layout, best.g, n, w.sharing, w.dominant_size, params, w.files)
    explanation = _explain_costs(w, variant, params, ranked, realised)
    mode: Mode = "static"
    hybrid = None
    if margin is not None and margin < delta:
        hybrid, why = _close_call(w, n, params, variant, delta, margin, ranked, realised)
        mode = "hybrid" if hybrid is not None else "static"
        explanation += why
    else:
        gap = f" by {margin:.1%}" if margin is not None else ""
        explanation += f"{best.label} wins{gap}."
    return Decision(target=w.target, kind=w.kind, sharing=w.sharing, requests=w.requests, bytes=w.nbytes,
                    read_fraction=w.read_fraction, random_fraction=w.random_fraction, dominant_size=w.dominant_size,
                    candidates=costs, choice=best.label, choice_layout=best.layout, choice_g=best.g, margin=margin,
                    mode=mode, hints=hints, hybrid=hybrid, explanation=explanation,
                    source="workload" if w.kind == "workload" else "trace")


def _explain_costs(w: Workload, variant: str, params: CostParams, ranked: list[CandidateCost],
                   realised: dict[Candidate, Candidate]) -> str:
    """The explanation's first sentences: the target, every candidate's predicted total (cheapest first)
    and which were costed as another layout."""
    parts = [f"{c.label}: {c.total:.6g} s (network {c.network:.6g} s, storage {c.storage:.6g} s)" for c in ranked]
    explanation = (f"{w.target}: {w.requests} requests, dominant size {w.dominant_size} B, {w.sharing}; "
                   f"predicted totals under the {variant} model — " + "; ".join(parts) + ". ")
    moved = [f"{candidate_label(*c)} as {candidate_label(*r)}" for c, r in realised.items() if r != c]
    if moved:
        explanation += (f"Realised at {w.dominant_size} B (strips of at least 4 KiB), a request touches fewer "
                        f"servers than its layout spans, so these are costed as what they behave as: "
                        f"{', '.join(moved)}. ")
    if params.per_op:
        explanation += f"Reads and writes costed apart ({w.read_fraction:.0%} reads). "
    return explanation


def _close_call(w: Workload, n: int, params: CostParams, variant: str, delta: float, margin: float,
                ranked: list[CandidateCost],
                realised: dict[Candidate, Candidate]) -> tuple[HybridRecommendation | None, str]:
    """The best two are within ``delta``: a replica set of the close candidates when one pays, and the
    sentence that says why there is one or not."""
    best = ranked[0]
    close = [c for c in ranked if c.total <= best.total * (1 + delta)]
    read_mostly = w.read_fraction >= HYBRID_MIN_READ_FRACTION
    hybrid = hybrid_replicas(w, n, params, variant, close, realised) if read_mostly else None
    if hybrid is not None:
        return hybrid, (f"The best two are within {delta:.0%} ({margin:.1%}) and requests differ in which is "
                        f"cheapest, so a replica set of {', '.join(r.label for r in hybrid.replicas)} is "
                        f"recommended; the shim routes each request to the cheapest copy (predicted "
                        f"{hybrid.predicted_total:.6g} s vs {best.total:.6g} s static).")
    if read_mostly:
        return None, (f"The best two are within {delta:.0%} ({margin:.1%}) but no replica set is cheaper "
                      f"than {best.label} alone: the reads would not use a second copy enough to pay for "
                      f"writing every copy ({1 - w.read_fraction:.0%} writes); {best.label} is kept static.")
    return None, (f"The best two are within {delta:.0%} ({margin:.1%}) but only {w.read_fraction:.0%} of "
                  f"requests are reads; replicas suit read-mostly data, so {best.label} is kept static.")


def hybrid_replicas(w: Workload, n: int, params: CostParams, variant: str, close: list[CandidateCost],
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
    chosen, current = _greedy_copies(per, writes, weight)
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


def _greedy_copies(per: np.ndarray, writes: np.ndarray, weight: np.ndarray) -> tuple[list[int], float]:
    """The rows of ``per`` (candidates × requests, cheapest candidate first) ``hybrid_replicas`` keeps, in
    the order added, and the set's predicted total."""
    chosen = [0]  # the candidates are sorted by total: row 0 is the static best
    cheapest = per[0].copy()
    written = per[0].copy()  # Σ over the chosen copies: what a write costs

    def cost(cheap: np.ndarray, every: np.ndarray) -> float:
        # a trace knows each request's operation; a description or summary, only the read fraction
        return float(((1 - writes) * cheap + writes * every) @ weight)

    current = cost(cheapest, written)
    while len(chosen) < MAX_REPLICAS:
        gains = [(current - cost(np.minimum(cheapest, per[i]), written + per[i]), i)
                 for i in range(per.shape[0]) if i not in chosen]
        if not gains:
            break
        gain, i = max(gains)
        if gain <= current * 1e-9:
            break
        chosen.append(i)
        np.minimum(cheapest, per[i], out=cheapest)
        written += per[i]
        current = cost(cheapest, written)
    return chosen, current
