"""Plan from Darshan counters (no DXT): per file and per directory, the same ``WorkloadDescription`` an
`auto` rule gives, then the same costing (docs/trace-format.md, "Darshan counter logs").

Counters say how many requests of which sizes a file saw, not when. The stand-in for concurrency over time
is the **bulk-synchronous assumption**: every rank that touched the target issues its requests at the same
time, so p = those ranks (all ``nprocs`` for a shared record) — what a collective call or a checkpoint phase
does, and the worst case for contention. m = 1 (counter logs carry no host names; the same reading as a
trace without nodes). The log's timing is reported beside it as a check: Σ I/O time / I/O window is the
time-averaged concurrency, far below p when ranks did their I/O one after another.
"""

from __future__ import annotations

from dataclasses import dataclass

from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.planner.collective import CollectiveCall, advise
from pfslayout.planner.decide import DEFAULT_DELTA
from pfslayout.planner.models import Plan, Sharing, TargetKind, WorkloadDescription
from pfslayout.planner.plan import plan_workload
from pfslayout.traces.darshan_counters import CounterLog, FileCounters

ASSUMPTION = ("planned from Darshan counters (no DXT): they carry no overlap in time, so every rank that "
              "touched the target is assumed to do its I/O at the same time (bulk-synchronous: p = {p}); "
              "m = 1 (no host names in counter records)")


@dataclass(frozen=True)
class CounterTarget:
    """One directory or file of a counter log as the planner sees it."""

    workload: WorkloadDescription
    kind: TargetKind
    notes: list[str]
    collective_reads: int
    collective_writes: int
    nprocs: int


def _directory(name: str) -> str:
    return (name.rsplit("/", 1)[0] or "/") if "/" in name else "."


def _target(name: str, kind: TargetKind, files: list[FileCounters], log: CounterLog) -> CounterTarget:
    shared_all = any(f.ranks is None for f in files)
    ranks: set[int] = set()
    for f in files:
        ranks |= set(f.ranks or ())
    p = max(log.nprocs if shared_all else len(ranks), 1)
    sizes: dict[int, float] = {}
    for f in files:
        for size, count in f.sizes.items():
            sizes[size] = sizes.get(size, 0.0) + count
    requests = sum(f.requests for f in files)
    reads = sum(f.reads for f in files)
    known = [f for f in files if f.consecutive is not None]
    notes = [ASSUMPTION.format(p=p)]
    if known:
        consec = sum(int(f.consecutive or 0) for f in known)
        random_fraction = min(max(1.0 - consec / max(sum(f.requests for f in known), 1), 0.0), 1.0)
    else:
        random_fraction = 0.0
        notes.append("no POSIX record for these files, so no offset counters: requests are costed as sequential")
    sharing: Sharing = "shared" if any(f.rank_count(log.nprocs) > 1 for f in files) else "file-per-process"
    io_time = sum(f.io_time for f in files)
    starts = [f.first_io for f in files if f.first_io is not None]
    ends = [f.last_io for f in files if f.last_io is not None]
    if starts and ends and max(ends) > min(starts) and io_time > 0:
        window = max(ends) - min(starts)
        notes.append(f"timing check: Σ I/O time {io_time:.6g} s over an I/O window of {window:.6g} s is a "
                     f"time-averaged concurrency of {io_time / window:.3g} (the assumption uses p = {p})")
    histogram = [{"size": s, "weight": w} for s, w in sorted(sizes.items()) if w > 0]
    workload = WorkloadDescription.model_validate({
        "name": name, "processes": p, "procs_per_node": 1, "request_sizes": histogram,
        "read_fraction": reads / requests, "sharing": sharing, "random_fraction": random_fraction,
        "requests_per_process": max(round(requests / p), 1),
    })
    return CounterTarget(workload=workload, kind=kind, notes=notes, nprocs=log.nprocs,
                         collective_reads=sum(f.collective_reads for f in files),
                         collective_writes=sum(f.collective_writes for f in files))


def counter_targets(log: CounterLog, per: str = "directory") -> list[CounterTarget]:
    """Directory targets (``per='directory'``), file targets (``'file'``) or both, directories first."""
    out: list[CounterTarget] = []
    if per in ("directory", "both"):
        dirs: dict[str, list[FileCounters]] = {}
        for f in log.files:
            dirs.setdefault(_directory(f.name), []).append(f)
        out += [_target(d, "directory", fs, log) for d, fs in sorted(dirs.items())]
    if per in ("file", "both"):
        out += [_target(f.name, "file", [f], log) for f in sorted(log.files, key=lambda f: f.name)]
    return out


def plan_counters(log: CounterLog, n: int, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
                  delta: float = DEFAULT_DELTA, per: str = "directory", groups: list[int] | None = None,
                  cb_nodes: int | None = None) -> Plan:
    """One decision per target, costed as its workload description, marked as derived from counters."""
    targets = counter_targets(log, per)
    plan = plan_workload([t.workload for t in targets], n, params, variant, delta, groups)
    for decision, target in zip(plan.decisions, targets):
        decision.kind = target.kind
        decision.source = "darshan-counters"
        decision.assumptions = list(target.notes)
        decision.explanation += " " + " ".join(n_.rstrip(".") + "." for n_ in target.notes)
        if target.collective_reads + target.collective_writes:
            # counters give sizes, not offsets: rank r's data is taken as the r-th block of the call
            call = CollectiveCall.contiguous(target.workload.processes, decision.dominant_size,
                                             target.collective_reads, target.collective_writes)
            decision.collective = advise(call, decision.choice_layout, decision.choice_g, n, params, variant,
                                         cb_nodes)
            decision.explanation += " " + decision.collective.explanation
    return plan
