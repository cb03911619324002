"""A derived trace's workloads from per-target aggregates of numba passes (``planner/target_aggregates.py``):
``plan_trace``'s default path.

The same workloads as the reference (``planner.extract``: same targets, groups, counts and floats, so the
plans are identical), without per-target copies of the columns: per-request data of a target (hybrid
routing, its collective call) is gathered only when it is needed, through one order of the requests by
target. ``target_aggregates`` is imported inside the functions that use it: numba costs ~100 MB, and the
operator imports the planner without ever planning a trace.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from pfslayout.costmodel.fast import Groups, group_requests
from pfslayout.planner.extract import (
    collective_call,
    inconsistent_pm,
    negative_size,
    target_kinds,
    target_names,
    unknown_per,
)
from pfslayout.planner.models import TargetKind
from pfslayout.planner.target import Workload
from pfslayout.traces.model import OP_READ, Trace

_KEY_LIMIT = 1 << 62  # table keys the passes build stay below this (no int64 overflow)


def fast_path_applies(trace: Trace) -> bool:
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
            from pfslayout.planner import target_aggregates

            self.release()
            order = np.empty(len(self.trace), dtype=_index_dtype(len(self.trace)))
            self.keep(kind, order,
                      target_aggregates.order_by_target(self.trace.file_id, target_of_file, n_targets, order))
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


def fast_workloads(trace: Trace, per: str) -> list[Workload] | None:
    """The reference's workloads (same targets, groups, counts and floats) from per-target aggregates;
    None for inputs the reference defines (negative ids or ranks, p ≥ 2^30, keys that would overflow).
    Raises the reference's input errors, in its order."""
    from pfslayout.planner import target_aggregates

    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    bounds = target_aggregates.trace_bounds(trace.p, trace.m, trace.size, trace.file_id, trace.rank)
    pmin, pmax, mmin, mmax, m_over_p, smin, smax, fmin, fmax, rmin = (int(b) for b in bounds)
    if pmin < 1 or mmin < 1 or m_over_p:
        raise inconsistent_pm()
    if smin < 0:
        raise negative_size()
    if per not in ("directory", "file", "both"):
        raise unknown_per(per)
    if fmin < 0 or rmin < 0 or pmax >= 1 << 30:
        return None
    n_files = max(len(trace.files), fmax + 1)
    names, dirs = target_names(trace, n_files)
    width = mmax + 1
    n_slots = (pmax + 1) * width * 2
    N = len(trace)
    has_collective = trace.collective is not None
    collective = trace.collective if trace.collective is not None else np.zeros(1, dtype=np.bool_)
    first_rank = np.full(n_files, -1, dtype=np.int64)  # per file: its first rank, and whether another
    multi_rank = np.zeros(n_files, dtype=np.bool_)
    requests = _RequestOrder(trace)
    out: list[Workload] = []
    for k, (keys, kind) in enumerate(target_kinds(per, names, dirs)):
        targets, target_of_file = np.unique(np.array(keys, dtype=str), return_inverse=True)
        target_of_file = target_of_file.astype(np.int64, copy=False)
        nt = int(targets.size)
        args = (trace.file_id, trace.p, trace.m, trace.sequential, trace.size, trace.op, OP_READ, collective,
                has_collective, trace.rank, target_of_file, nt, width, n_slots, k == 0, first_rank, multi_rank)
        if nt * n_slots <= target_aggregates.DENSE_LIMIT and (smax + 1) * 4 * nt < _KEY_LIMIT:
            reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt = target_aggregates.aggregate_dense(*args)
        elif (smax + 1) * 4 < _KEY_LIMIT:
            requests.release()  # one int32 array of N at a time
            order = np.empty(N, dtype=_index_dtype(N))
            start, reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt = target_aggregates.aggregate_sorted(
                *args, n_slots <= target_aggregates.SLOT_LIMIT, order)
            requests.keep(k, order, start)
        else:
            return None
        out += _kind_workloads(trace, kind, k, [str(x) for x in targets], target_of_file, width, requests,
                               first_rank, multi_rank, reads, nbytes, ncoll, dominant, g_t, g_slot, g_cnt, g_byt)
    return out


def _kind_workloads(trace: Trace, kind: TargetKind, k: int, targets: list[str], target_of_file: np.ndarray,
                    width: int, requests: _RequestOrder, first_rank: np.ndarray, multi_rank: np.ndarray,
                    reads: np.ndarray, nbytes: np.ndarray, ncoll: np.ndarray, dominant: np.ndarray, g_t: np.ndarray,
                    g_slot: np.ndarray, g_cnt: np.ndarray, g_byt: np.ndarray) -> list[Workload]:
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
        w = Workload(target=targets[t], kind=kind, sharing="shared" if shared_t[t] else "file-per-process",
                     groups=groups, sizes=None, requests=req, nbytes=nbytes_l[t], read_fraction=reads_l[t] / req,
                     random_fraction=randoms_t[t] / req, dominant_size=dominant_l[t], files=files_t[t],
                     expand=partial(_expand, trace, requests, k, target_of_file, nt, t))
        if ncoll_l[t]:
            w.call = collective_call(trace, requests.select(k, target_of_file, nt, t))
        out.append(w)
    return out
