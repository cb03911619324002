"""Plan from a file, whatever it holds: a trace (CSV, shim directory, Darshan DXT) or Darshan counters.

The one entry point the CLI (and any LayoutPolicy trace source) uses, so a counter-only Darshan log is
accepted wherever a trace is: a log with DXT is read as requests, one without as counters
(``planner.counters``).
"""

from __future__ import annotations

from pathlib import Path

from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.planner.decide import DEFAULT_DELTA
from pfslayout.planner.models import Plan
from pfslayout.planner.plan import plan_trace


def plan_from_file(path: str | Path, fmt: str | None, n: int, params: CostParams = SEED_ETHERNET,
                   variant: str = "corrected", delta: float = DEFAULT_DELTA, per: str = "directory",
                   groups: list[int] | None = None, cb_nodes: int | None = None) -> Plan:
    # imported here: Darshan support loads a C library, and the trace readers pull in more than the
    # workload path needs
    from pfslayout.traces import load_trace
    from pfslayout.traces.load import detect_format

    fmt = fmt or detect_format(path)
    if fmt == "darshan" and not has_dxt(path):
        from pfslayout.planner.counters import plan_counters
        from pfslayout.traces.darshan_counters import read_darshan_counters

        return plan_counters(read_darshan_counters(path), n, params, variant, delta, per, groups, cb_nodes)
    trace = load_trace(path, fmt, group="file" if per == "file" else "directory")
    return plan_trace(trace, n, params, variant, delta, per=per, groups=groups, cb_nodes=cb_nodes)


def has_dxt(path: str | Path) -> bool:
    """Whether a Darshan log carries a DXT module (checked after its version, so an unreadable or
    unsupported log fails here with the reader's one-line message)."""
    from pfslayout.traces.darshan_log import MODULES
    from pfslayout.traces.darshan_open import open_report

    report = open_report(Path(path))
    return any(m in report.modules for m in MODULES)
