"""What the planner knows of one target (a directory, a file, a described workload): ``Workload``.

Every source of requests is reduced to one: a trace (``planner.extract``, or ``planner.extract_fast``
from numba aggregates), a workload description (``workload_from_description``) or a trace summary
(``planner.summary``, through ``weighted_workload``). The decision (``planner.decide``) reads only this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pfslayout.costmodel.fast import Groups, group_requests
from pfslayout.planner.collective import CollectiveCall
from pfslayout.planner.models import Sharing, TargetKind, WorkloadDescription


@dataclass
class Workload:
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


def weighted_workload(target: str, kind: TargetKind, sharing: Sharing, p: np.ndarray, m: np.ndarray,
                      size: np.ndarray, random: np.ndarray, weight: np.ndarray, *, read_fraction: float,
                      files: int | None) -> Workload:
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
    return Workload(target=target, kind=kind, sharing=sharing, groups=groups, sizes=rows_s,
                    requests=round(total), nbytes=round(float((rows_w * rows_s).sum())),
                    read_fraction=read_fraction,
                    random_fraction=float((rows_w * rows_r).sum() / total) if total > 0 else 0.0,
                    dominant_size=dominant, weights=rows_w, files=files)


def workload_from_description(desc: WorkloadDescription) -> Workload:
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
