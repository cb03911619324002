"""A derived trace's workloads, one per target (directory, file or both): the reference path.

Per-target numpy code (one stable argsort of the requests by target, fancy-indexed copies of the columns
per target): the original, and what defines the result. ``planner.extract_fast`` builds the same
workloads from numba aggregates and is tested against this (operator/tests/unit/test_plan_fast.py); it
shares the helpers below (target names, the input errors, a target's collective call) so the two cannot
drift apart there.
"""

from __future__ import annotations

import numpy as np

from pfslayout.costmodel.fast import group_requests
from pfslayout.errors import InputError
from pfslayout.planner.collective import CollectiveCall
from pfslayout.planner.models import Sharing, TargetKind
from pfslayout.planner.target import Workload
from pfslayout.traces.model import OP_READ, Trace


def reference_workloads(trace: Trace, per: str) -> list[Workload]:
    """The workloads of every target of ``per`` (``directory``, ``file`` or ``both``: the directories',
    then the files'). The trace is derived and not empty."""
    assert trace.p is not None and trace.m is not None  # what `derived` checked, for the type checker
    if np.any(trace.p < 1) or np.any(trace.m < 1) or np.any(trace.m > trace.p):
        raise inconsistent_pm()
    if np.any(trace.size < 0):
        raise negative_size()
    if per not in ("directory", "file", "both"):
        raise unknown_per(per)
    n_files = max(len(trace.files), int(trace.file_id.max()) + 1)
    names, dirs = target_names(trace, n_files)
    # a file is shared when more than one rank touches it
    fid = trace.file_id.astype(np.int64)
    width = int(trace.rank.max()) + 1
    ranks_per_file = np.bincount(np.unique(fid * width + trace.rank) // width, minlength=n_files)
    workloads = []
    for keys, kind in target_kinds(per, names, dirs):
        workloads += _target_workloads(trace, fid, keys, kind, ranks_per_file)
    return workloads


def _trace_workload(trace: Trace, sel: np.ndarray, target: str, kind: TargetKind, shared: bool) -> Workload:
    assert trace.p is not None and trace.m is not None and trace.sequential is not None
    size = trace.size[sel]
    rnd = ~trace.sequential[sel]
    groups = group_requests(trace.p[sel], trace.m[sel], size, rnd, with_key=True)
    sharing: Sharing = "shared" if shared else "file-per-process"
    vals, counts = np.unique(size, return_counts=True)
    dominant = int(vals[np.lexsort((vals, counts))[-1]]) if vals.size else 0
    return Workload(target=target, kind=kind, sharing=sharing, groups=groups, sizes=size.astype(np.float64),
                    requests=int(size.size), nbytes=int(size.sum()),
                    read_fraction=float(np.mean(trace.op[sel] == OP_READ)) if size.size else 0.0,
                    random_fraction=float(np.mean(rnd)) if size.size else 0.0, dominant_size=dominant,
                    writes=(trace.op[sel] != OP_READ).astype(np.float64))


def _target_workloads(trace: Trace, fid: np.ndarray, keys: list[str], kind: TargetKind,
                      ranks_per_file: np.ndarray) -> list[Workload]:
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


def inconsistent_pm() -> InputError:
    return InputError("--trace", "derived p/m are inconsistent (need 1 <= m <= p)")


def negative_size() -> InputError:
    return InputError("--trace", "has a negative request size")


def unknown_per(per: str) -> InputError:
    return InputError("per", f"unknown grouping {per!r}", "use directory, file or both")


def target_names(trace: Trace, n_files: int) -> tuple[list[str], list[str]]:
    """Each file id's name (ids beyond ``trace.files`` named ``<file i>``) and directory."""
    names = [trace.files[i] if i < len(trace.files) else f"<file {i}>" for i in range(n_files)]
    dirs = [(name.rsplit("/", 1)[0] or "/") if "/" in name else "." for name in names]
    return names, dirs


def target_kinds(per: str, names: list[str], dirs: list[str]) -> list[tuple[list[str], TargetKind]]:
    """Each file's target name per kind ``per`` asks for: directories first, then files."""
    out: list[tuple[list[str], TargetKind]] = []
    if per in ("directory", "both"):
        out.append((dirs, "directory"))
    if per in ("file", "both"):
        out.append((names, "file"))
    return out
