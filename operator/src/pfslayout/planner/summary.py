"""What a trace says about each directory a policy lays out, small enough to keep (pure).

A LayoutPolicy learns from the traces of a finished job: the collector Job reads the per-rank files from
OrangeFS, derives p, m and sequentiality (traces/derive.py) and reduces the requests under each rule's
directory to a `TraceSummary`: the distinct (p, m, request size, random) rows with their counts, plus
what the hints need (sharing, dominant size, files, read share). The operator stores the summaries, not
the traces, and costs them with whatever parameters are current (`plan_summary`), so a recalibration
re-plans a learned rule without reading the traces again.

The rows are exact while there are at most `MAX_ROWS` of them; beyond that request sizes are rounded to
powers of two (their counts and byte totals kept), which the model's per-request terms tolerate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.planner.decide import DEFAULT_DELTA
from pfslayout.planner.models import Plan
from pfslayout.planner.plan import plan_workloads
from pfslayout.planner.target import weighted_workload
from pfslayout.traces.model import OP_READ, Trace

FORMAT: Literal["pfslayout-trace-summary/1"] = "pfslayout-trace-summary/1"
MAX_ROWS = 4096


class TraceSummary(BaseModel):
    """The requests of one traced run under one directory."""

    format: Literal["pfslayout-trace-summary/1"] = FORMAT
    path: str = Field(description="the directory (client path) the requests fall under")
    requests: int
    bytes: int
    ranks: int = Field(description="distinct ranks with requests there")
    files: int
    sharing: Literal["file-per-process", "shared"]
    read_fraction: float
    dominant_size: int
    rounded: bool = Field(default=False, description="request sizes were rounded to powers of two")
    rows: list[tuple[int, int, int, int, int]] = Field(description="(p, m, size, random 0/1, count)")
    seconds: float | None = Field(default=None, description="the I/O time the trace measured: the sum over the "
                                  "requests of end − start (every rank's), the quantity the model's totals "
                                  "predict; None when the source has no request times")


def _bare(name: str) -> str:
    """A file name as the trace recorded it, without a ROMIO prefix (`pvfs2:/mnt/x` → `/mnt/x`)."""
    head, sep, tail = name.partition(":")
    return tail if sep and head.isalnum() and tail.startswith("/") else name


def owner_of(name: str, paths: Sequence[str]) -> str | None:
    """The longest of `paths` that contains file `name` (the rule whose layout the file gets)."""
    best = None
    for p in paths:
        base = p.rstrip("/") or "/"
        if (name.startswith(base + "/") or base == "/") and (best is None or len(base) > len(best)):
            best = p
    return best


def _rows(p: np.ndarray, m: np.ndarray, size: np.ndarray, rnd: np.ndarray) -> tuple[np.ndarray, bool]:
    table = np.stack([p.astype(np.int64), m.astype(np.int64), size.astype(np.int64), rnd.astype(np.int64)], axis=1)
    uniq, count = np.unique(table, axis=0, return_counts=True)
    if len(uniq) <= MAX_ROWS:
        return np.column_stack([uniq, count]), False
    rounded = table.copy()
    rounded[:, 2] = np.where(table[:, 2] > 0, 2 ** np.round(np.log2(np.maximum(table[:, 2], 1))), 0)
    uniq, count = np.unique(rounded, axis=0, return_counts=True)
    return np.column_stack([uniq, count]), True


def summarise(trace: Trace, paths: Sequence[str]) -> dict[str, TraceSummary]:
    """{rule path: summary} for the rule paths that have requests in the (derived) trace."""
    assert trace.p is not None and trace.m is not None and trace.sequential is not None, "derive the trace first"
    names = [_bare(f) for f in trace.files]
    n_files = max(len(names), int(trace.file_id.max()) + 1 if len(trace) else 0)
    owner_idx = np.full(n_files, -1, dtype=np.int64)
    for i, name in enumerate(names):
        o = owner_of(name, paths)
        if o is not None:
            owner_idx[i] = list(paths).index(o)
    req_owner = owner_idx[trace.file_id.astype(np.int64)] if len(trace) else np.zeros(0, np.int64)
    out: dict[str, TraceSummary] = {}
    for k, path in enumerate(paths):
        sel = np.flatnonzero(req_owner == k)
        if sel.size == 0:
            continue
        fid, rank = trace.file_id[sel].astype(np.int64), trace.rank[sel].astype(np.int64)
        pairs = np.unique(fid * (int(rank.max()) + 1) + rank)
        ranks_per_file = np.bincount(pairs // (int(rank.max()) + 1))
        rows, rounded = _rows(trace.p[sel], trace.m[sel], trace.size[sel], ~trace.sequential[sel])
        vals, counts = np.unique(trace.size[sel], return_counts=True)
        took = float(np.sum(trace.end[sel] - trace.start[sel]))
        out[path] = TraceSummary(
            path=path, requests=int(sel.size), bytes=int(trace.size[sel].sum()), ranks=int(np.unique(rank).size),
            files=int(np.count_nonzero(ranks_per_file)),
            sharing="shared" if bool(np.any(ranks_per_file > 1)) else "file-per-process",
            read_fraction=float(np.mean(trace.op[sel] == OP_READ)),
            dominant_size=int(vals[np.lexsort((vals, counts))[-1]]), rounded=rounded,
            seconds=took if took > 0 else None,
            rows=[(int(a), int(b), int(c), int(d), int(e)) for a, b, c, d, e in rows.tolist()])
    return out


def plan_summary(summary: TraceSummary, n: int, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
                 delta: float = DEFAULT_DELTA) -> Plan:
    """The planner's decision for the summarised requests (one decision, `source` trace)."""
    rows = np.asarray(summary.rows, dtype=np.int64).reshape(-1, 5)
    w = weighted_workload(summary.path, "directory", summary.sharing, rows[:, 0], rows[:, 1],
                          rows[:, 2].astype(np.float64), rows[:, 3].astype(bool), rows[:, 4].astype(np.float64),
                          read_fraction=summary.read_fraction, files=summary.files)
    w.dominant_size = summary.dominant_size  # exact, even when the rows were rounded
    return plan_workloads([w], n, params, variant, delta)
