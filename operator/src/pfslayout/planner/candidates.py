"""The candidate layouts of a target and their predicted cost (003 §4, docs/seeds.md §3.1).

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

import numpy as np

from pfslayout.costmodel.fast import Groups, Totals, group_requests, layout_totals, layout_totals_many
from pfslayout.costmodel.params import CostParams
from pfslayout.planner.classify import realised_as
from pfslayout.planner.models import CandidateCost, LayoutName
from pfslayout.planner.target import Workload

Candidate = tuple[LayoutName, int | None]

UNIFORM_SIZES = 0.01  # a target whose mean request is within 1% of its dominant size has one size


def useful_groups(n: int) -> list[int]:
    return [g for g in range(2, n) if n % g == 0]


def groups_note(n: int, groups: list[int], extra: list[int]) -> str:
    base = (f"2-D candidates use the divisors of n={n} strictly between 1 and n ({groups or 'none'}); g=1 equals "
            "1-DH and g=n equals 1-DV; g not dividing n is not proposed (uneven groups)")
    if extra:
        base += f"; also costed on request: g={extra} (⌊n/g⌋ parallel width)"
    return base


def candidate_set(n: int, gs: list[int]) -> list[Candidate]:
    static: list[Candidate] = [("1-DH", None), ("1-DV", None)]
    return static + [("2-D", g) for g in gs]


def candidate_label(layout: str, g: int | None) -> str:
    return f"2-D(g={g})" if layout == "2-D" else layout


def realisations(w: Workload, n: int, cands: list[Candidate], variant: str) -> dict[Candidate, Candidate]:
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
    return CandidateCost(layout=layout, g=g, label=candidate_label(layout, g), T_e=t.T_e, T_x=t.T_x,
                         T_s=t.T_s, T_rw=t.T_rw, network=t.network, storage=t.storage, total=t.total)


def cost_groups(groups: Groups, n: int, cands: list[Candidate], params: CostParams, variant: str,
                realised: dict[Candidate, Candidate] | None = None) -> list[CandidateCost]:
    out = []
    for layout, g in cands:
        as_layout, as_g = realised[(layout, g)] if realised else (layout, g)
        out.append(_candidate(layout, g, layout_totals(as_layout, groups, n, as_g, params, variant)))
    return out


def _distinct_rows(sets: list[Groups]) -> tuple[Groups, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (p, m, random) rows of all sets' groups, each group's row, and the groups' counts and
    bytes, concatenated in set order."""
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
    return rows, row_of, count, nbytes


def cost_many(sets: list[Groups], n: int, cands: list[Candidate], params: list[CostParams],
              variant: str, realised: list[dict[Candidate, Candidate]]) -> list[list[CandidateCost]]:
    """``cost_groups`` of many targets at once, the same floats (``layout_totals_many``): the coefficients
    once per distinct (p, m, random) of all targets' groups, then each target's dot products."""
    if not sets:
        return []
    sizes = [len(gr) for gr in sets]
    rows, row_of, count, nbytes = _distinct_rows(sets)
    # every (layout, g) some target's candidates are realised as, costed once for all targets
    needed = sorted({r for per_set in realised for r in per_set.values()}, key=lambda c: (c[0], c[1] or 0))
    totals = {(layout, g): layout_totals_many(layout, rows, row_of, count, nbytes, sizes, n, g, params, variant)
              for layout, g in needed}
    return [[_candidate(layout, g, totals[realised[i][(layout, g)]][i]) for layout, g in cands]
            for i in range(len(sets))]
