"""The planner's entry points: a derived ``Trace``, ``WorkloadDescription``s or prepared workloads in, a
``Plan`` out (pure).

Each checks its arguments, reduces its input to one ``Workload`` per target (``planner.extract`` and
``planner.extract_fast`` for traces, ``planner.target`` otherwise) and has ``planner.decide`` choose.
"""

from __future__ import annotations

import numpy as np

from pfslayout.costmodel.formulas import check_variant
from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.planner.candidates import useful_groups
from pfslayout.planner.decide import DEFAULT_DELTA, plan_targets
from pfslayout.planner.extract import reference_workloads
from pfslayout.planner.extract_fast import fast_path_applies, fast_workloads
from pfslayout.planner.models import Plan, WorkloadDescription
from pfslayout.planner.target import Workload, workload_from_description
from pfslayout.traces.model import Trace


def plan_trace(trace: Trace, n: int, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
               delta: float = DEFAULT_DELTA, per: str = "directory", groups: list[int] | None = None,
               cb_nodes: int | None = None, *, method: str = "fast") -> Plan:
    """One decision per directory (the unit OrangeFS hints apply to), per file (``per='file'``), or
    both (``per='both'``: the directory decisions, then one per file).

    ``method``: ``fast`` (default: per-target aggregates from linear numba passes, ``extract_fast``) or
    ``reference`` (the original per-target numpy code, ``extract``, kept to test against) — the plans are
    identical."""
    if method not in ("fast", "reference"):
        raise InputError("method", f"unknown plan method {method!r}", "use fast or reference")
    base, extra = _check_common(n, variant, delta, groups)
    if len(trace) == 0:
        raise InputError("--trace", "holds no I/O requests", "trace a run that reads or writes data")
    if not trace.derived:
        raise InputError("--trace", "p, m and sequential are not derived",
                         "load it with pfslayout.traces.load_trace (or call traces.derive)")
    if method == "fast" and fast_path_applies(trace):
        fast = fast_workloads(trace, per)
        if fast is not None:
            return plan_targets(fast, n, params, variant, delta, base, extra, cb_nodes, batched=True)
    return plan_targets(reference_workloads(trace, per), n, params, variant, delta, base, extra, cb_nodes)


def plan_workloads(workloads: list[Workload], n: int, params: CostParams = SEED_ETHERNET,
                   variant: str = "corrected", delta: float = DEFAULT_DELTA) -> Plan:
    """One decision per prepared workload (`weighted_workload`)."""
    base, extra = _check_common(n, variant, delta, None)
    return plan_targets(workloads, n, params, variant, delta, base, extra)


def plan_workload(descs: WorkloadDescription | list[WorkloadDescription], n: int,
                  params: CostParams = SEED_ETHERNET, variant: str = "corrected", delta: float = DEFAULT_DELTA,
                  groups: list[int] | None = None) -> Plan:
    """One decision per described workload (costs are expected totals over its requests)."""
    base, extra = _check_common(n, variant, delta, groups)
    items = descs if isinstance(descs, list) else [descs]
    if not items:
        raise InputError("workloads", "is empty", "describe at least one workload")
    return plan_targets([workload_from_description(d) for d in items], n, params, variant, delta, base, extra)


def _check_common(n: int, variant: str, delta: float, groups: list[int] | None) -> tuple[list[int], list[int]]:
    """The arguments every entry point takes, checked; the useful g of n and the extra g asked for."""
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
