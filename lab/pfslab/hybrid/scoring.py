"""Scoring a ``lab hybrid`` run (pure: measured times in, scores out, so the command, the report and the
unit tests all score one way).

**The scores** (``score``): per variant per phase the median and spread over the rounds; a
variant's total is the sum of its phase medians; the per-phase *oracle* is Σ over phases of the fastest
static variant's median (default included: it is a static layout too); *gain* = default / hybrid − 1;
*distance* to the oracle = hybrid / oracle − 1; the *sync cost* is the write phase's time with the
replicas against without them (the default's and the fastest static write), with the bytes written;
the *break-even* (``break_even``) is how many read passes per write each goal needs by the run's medians;
the *speed-up* over the default per phase (``phase_speedup``) is the lab validation's gain measure
(``pfslab.score.gain``) on the phases: geometric means over all and over the decisive phases, the worst.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pfslab.hybrid.plan import DEFAULT, HYBRID, Phase
from pfslab.score import MARGIN, geomean, layout_order, spread

GOAL_GAIN = 0.20  # the goals: ≥ 20% faster than the default layout ...
GOAL_DISTANCE = 0.05  # ... and within 5% of the per-phase oracle


def score(times: Mapping[str, Mapping[str, Sequence[float]]], phases: Sequence[Phase], *, procs: int, block: int,
          replicas: int, default: str = DEFAULT, hybrid: str = HYBRID) -> dict[str, Any]:
    """Scores of one run. ``times[variant][phase]`` are the rounds' times (seconds); every variant that is
    not ``hybrid`` is a static layout (``default`` among them). Raises on a missing variant or phase."""
    names = [p.name for p in phases]
    if hybrid not in times or default not in times:
        raise ValueError(f"times need the {default!r} and {hybrid!r} variants (have {sorted(times)})")
    for v, per in times.items():
        if missing := [n for n in names if not per.get(n)]:
            raise ValueError(f"{v}: no times for phase(s) {', '.join(missing)}")
    statics = sorted((v for v in times if v != hybrid), key=_variant_order)
    median = {v: {n: float(statistics.median(times[v][n])) for n in names} for v in times}
    total = {v: sum(median[v].values()) for v in times}
    reads = [p.name for p in phases if p.op == "read"]
    read_total = {v: sum(median[v][n] for n in reads) for v in times}

    def quickest(phase: str) -> str:
        return min(statics, key=lambda v: (median[v][phase], _variant_order(v)))

    oracle_layout = {n: quickest(n) for n in names}
    oracle_phase = {n: median[oracle_layout[n]][n] for n in names}
    oracle = sum(oracle_phase.values())
    oracle_reads = sum(oracle_phase[n] for n in reads)
    best_static = min(statics, key=lambda v: (total[v], _variant_order(v)))
    writes = [p.name for p in phases if p.op == "write"]
    write = writes[0]
    fastest_write = oracle_layout[write]
    hybrid_write, default_write = median[hybrid][write], median[default][write]
    written = procs * block
    return {
        "variants": [*statics, hybrid],
        "median": median,
        "spread": {v: {n: spread(times[v][n]) for n in names} for v in times},
        "times": {v: {n: list(times[v][n]) for n in names} for v in times},
        "total": total,
        "read_total": read_total,
        "oracle": {"total": oracle, "per_phase": oracle_phase, "layout": oracle_layout, "reads": oracle_reads},
        "best_static": {"layout": best_static, "total": total[best_static]},
        "gain": total[default] / total[hybrid] - 1,
        "gain_over_best_static": total[best_static] / total[hybrid] - 1,
        "distance_to_oracle": total[hybrid] / oracle - 1,
        "reads": {"gain": read_total[default] / read_total[hybrid] - 1,
                  "distance_to_oracle": read_total[hybrid] / oracle_reads - 1} if reads else None,
        "sync_cost": {
            "phase": write,
            "hybrid": hybrid_write,
            "default": default_write,
            "fastest_static": {"layout": fastest_write, "time": median[fastest_write][write]},
            "vs_default": hybrid_write / default_write - 1,
            "vs_fastest_static": hybrid_write / median[fastest_write][write] - 1,
            "bytes_written": {"hybrid": written * replicas, "static": written},
            "replicas": replicas,
        },
        "goals": {"gain_at_least": GOAL_GAIN, "distance_at_most": GOAL_DISTANCE,
                  "gain_met": total[default] / total[hybrid] - 1 >= GOAL_GAIN,
                  "distance_met": total[hybrid] / oracle - 1 <= GOAL_DISTANCE},
        "break_even": break_even(phases, median, oracle_phase, default=default, hybrid=hybrid),
        "speedup": phase_speedup(median, names, [v for v in statics if v != default], default=default,
                                 hybrid=hybrid),
    }



def phase_speedup(median: Mapping[str, Mapping[str, float]], names: Sequence[str], layouts: Sequence[str], *,
                  default: str = DEFAULT, hybrid: str = HYBRID, margin: float = MARGIN) -> dict[str, Any]:
    """default / hybrid per phase, as ``lab validate`` scores a configuration: geometric mean over every phase
    and over the decisive ones (the fastest of the model's static ``layouts`` more than ``margin`` ahead of
    the runner-up), and the worst phase."""
    per = {n: median[default][n] / median[hybrid][n] for n in names if median[hybrid][n] > 0}
    if not per:
        raise ValueError("no phase with a positive hybrid time")

    def clear(n: str) -> bool:
        ranked = sorted(median[v][n] for v in layouts)
        return len(ranked) >= 2 and ranked[1] > ranked[0] * (1 + margin)

    decisive = [x for n, x in per.items() if clear(n)]
    worst = min(per, key=lambda n: per[n])
    return {"per_phase": per, "geomean": geomean(list(per.values())), "decisive": len(decisive),
            "geomean_decisive": geomean(decisive) if decisive else None, "worst": per[worst], "worst_phase": worst}


def passes_needed(write_a: float, per_pass_a: float, write_b: float, per_pass_b: float,
                  factor: float) -> int | None:
    """The fewest read passes N ≥ 1 with write_a + N·per_pass_a ≥ factor·(write_b + N·per_pass_b), or None
    when more passes never get there (each pass gains nothing on the factor)."""
    slope = per_pass_a - factor * per_pass_b
    need = factor * write_b - write_a
    if need <= 0:
        return 1
    if slope <= 0:
        return None
    return max(1, math.ceil(need / slope))


def break_even(phases: Sequence[Phase], median: Mapping[str, Mapping[str, float]], oracle_phase: Mapping[str, float],
               *, default: str = DEFAULT, hybrid: str = HYBRID) -> dict[str, Any]:
    """How many read passes per write this run's medians say the goals need — an extrapolation that
    assumes every further pass costs what this run's passes did on average: the hybrid pays its extra
    copy once, at the write, and gains (or loses) a little on every read pass."""
    writes = [p.name for p in phases if p.op == "write"]
    reads = [p for p in phases if p.op == "read"]
    if not writes or not reads:
        return {"passes": 0, "passes_for_gain": None, "passes_for_distance": None}
    first = reads[0]
    passes = sum(1 for p in reads if (p.pattern, p.transfer) == (first.pattern, first.transfer))

    def split(times: Mapping[str, float]) -> tuple[float, float]:
        return sum(times[n] for n in writes), sum(times[p.name] for p in reads) / passes

    (w_h, r_h), (w_d, r_d), (w_o, r_o) = split(median[hybrid]), split(median[default]), split(oracle_phase)
    return {
        "passes": passes,
        "per_pass": {"hybrid": r_h, "default": r_d, "oracle": r_o},
        "write": {"hybrid": w_h, "default": w_d, "oracle": w_o},
        # default ≥ (1 + gain)·hybrid, and (1 + distance)·oracle ≥ hybrid
        "passes_for_gain": passes_needed(w_d, r_d, w_h, r_h, 1 + GOAL_GAIN),
        "passes_for_distance": passes_needed((1 + GOAL_DISTANCE) * w_o, (1 + GOAL_DISTANCE) * r_o, w_h, r_h, 1.0),
    }


def _variant_order(v: str) -> tuple[int, int, int]:
    if v == DEFAULT:
        return (1, 0, 0)
    if v == HYBRID:
        return (2, 0, 0)
    return (0, *layout_order(v))
