"""Darshan counter records (no DXT) → per-file access statistics the planner turns into workloads.

Most sites run Darshan with DXT off: the log then holds one record per (rank, file) — or one *shared*
record (rank −1) when every rank opened the file — with counters, not requests. What the cost model needs
per request (p, m, s, sequential) is recovered as far as counters allow (docs/trace-format.md, "Darshan
counter logs"):

* **s** — the request-size histogram: the four most common sizes exactly (``*_ACCESS1..4``), the rest of
  each size bin (``*_SIZE_READ_*``/``*_SIZE_WRITE_*``) at the bin's midpoint;
* **reads / writes** — ``*_READS``/``*_WRITES`` (MPI-IO: independent + collective + split + nonblocking);
* **sequential** — ``POSIX_CONSEC_*`` (offset = previous end, the model's definition, docs/seeds.md §6 A5);
  the MPI-IO module has no such counter, so an MPI-IO record borrows the POSIX record of the same file;
* **collective** — ``MPIIO_COLL_READS``/``MPIIO_COLL_WRITES``;
* **ranks** — all ``nprocs`` for a shared record, else the ranks with a record that moved data;
* **timing** — cumulative read/write time and the first/last I/O timestamps, for the concurrency check.

The MPI-IO record is preferred where it moved data (one count per MPI-IO call, what the shim and DXT_MPIIO
see); otherwise the POSIX one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.darshan_open import check_version, open_report

COUNTER_MODULES = ("MPI-IO", "POSIX")

KIB = 1024
# Darshan's size bins (darshan-log-format.h), bounds in bytes; the last bin is open-ended
BINS: tuple[tuple[str, int, int | None], ...] = (
    ("0_100", 0, 100), ("100_1K", 100, KIB), ("1K_10K", KIB, 10 * KIB), ("10K_100K", 10 * KIB, 100 * KIB),
    ("100K_1M", 100 * KIB, KIB * KIB), ("1M_4M", KIB * KIB, 4 * KIB * KIB),
    ("4M_10M", 4 * KIB * KIB, 10 * KIB * KIB), ("10M_100M", 10 * KIB * KIB, 100 * KIB * KIB),
    ("100M_1G", 100 * KIB * KIB, KIB**3), ("1G_PLUS", KIB**3, None),
)


@dataclass
class FileCounters:
    """One file's counters summed over its records (one module)."""

    name: str
    module: str
    ranks: frozenset[int] | None  # None = every rank of the job (a shared record)
    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    sizes: dict[int, float] = field(default_factory=dict)  # request size -> count
    consecutive: int | None = None  # requests at offset = previous end; None when the module cannot say
    collective_reads: int = 0
    collective_writes: int = 0
    io_time: float = 0.0  # read + write seconds, summed over ranks
    first_io: float | None = None
    last_io: float | None = None

    @property
    def requests(self) -> int:
        return self.reads + self.writes

    def rank_count(self, nprocs: int) -> int:
        return nprocs if self.ranks is None else len(self.ranks)


@dataclass
class CounterLog:
    path: Path
    version: str
    nprocs: int
    files: list[FileCounters]
    modules: list[str]


def _bin_of(size: int) -> int:
    for i, (_, lo, hi) in enumerate(BINS):
        if size >= lo and (hi is None or size < hi):
            return i
    return len(BINS) - 1


def _histogram(c: dict[str, float], prefix: str) -> dict[int, float]:
    """Exact common sizes (ACCESS1..4) plus each bin's remaining count at the bin's midpoint."""
    agg = "AGG_" if prefix == "MPIIO" else ""
    left = [c.get(f"{prefix}_SIZE_READ_{agg}{b}", 0.0) + c.get(f"{prefix}_SIZE_WRITE_{agg}{b}", 0.0)
            for b, _, _ in BINS]
    out: dict[int, float] = {}
    for k in range(1, 5):
        size, count = int(c.get(f"{prefix}_ACCESS{k}_ACCESS", 0)), float(c.get(f"{prefix}_ACCESS{k}_COUNT", 0))
        if count <= 0:
            continue
        out[size] = out.get(size, 0.0) + count
        i = _bin_of(size)
        left[i] = max(left[i] - count, 0.0)
    for (_, lo, hi), count in zip(BINS, left):
        if count > 0:
            mid = (lo + hi) // 2 if hi is not None else lo
            out[mid] = out.get(mid, 0.0) + count
    return out


def _records(report: Any, module: str) -> list[tuple[int, int, dict[str, float]]]:
    """(rank, file id, counters by name) per record, counters and fcounters together."""
    from darshan.backend import cffi_backend

    names = list(cffi_backend.counter_names(module)) + list(cffi_backend.fcounter_names(module))
    report.mod_read_all_records(module, dtype="numpy", warnings=False)
    out = []
    for rec in report.records[module]:
        values = np.concatenate([np.asarray(rec["counters"], dtype=np.float64),
                                 np.asarray(rec["fcounters"], dtype=np.float64)])
        out.append((int(rec["rank"]), int(rec["id"]), dict(zip(names, values.tolist()))))
    return out


def _fold(name: str, module: str, recs: list[tuple[int, dict[str, float]]]) -> FileCounters:
    prefix = "MPIIO" if module == "MPI-IO" else "POSIX"
    shared = any(rank < 0 for rank, _ in recs)
    fc = FileCounters(name=name, module=module, ranks=None if shared else frozenset(
        rank for rank, c in recs if c.get(f"{prefix}_BYTES_READ", 0) + c.get(f"{prefix}_BYTES_WRITTEN", 0) > 0))
    starts, ends = [], []
    consec = 0
    for _, c in recs:
        if module == "MPI-IO":
            kinds = ("INDEP", "COLL", "SPLIT", "NB")
            fc.reads += int(sum(c.get(f"MPIIO_{k}_READS", 0) for k in kinds))
            fc.writes += int(sum(c.get(f"MPIIO_{k}_WRITES", 0) for k in kinds))
            fc.collective_reads += int(c.get("MPIIO_COLL_READS", 0))
            fc.collective_writes += int(c.get("MPIIO_COLL_WRITES", 0))
        else:
            fc.reads += int(c.get("POSIX_READS", 0))
            fc.writes += int(c.get("POSIX_WRITES", 0))
            consec += int(c.get("POSIX_CONSEC_READS", 0) + c.get("POSIX_CONSEC_WRITES", 0))
        fc.bytes_read += int(c.get(f"{prefix}_BYTES_READ", 0))
        fc.bytes_written += int(c.get(f"{prefix}_BYTES_WRITTEN", 0))
        for size, count in _histogram(c, prefix).items():
            fc.sizes[size] = fc.sizes.get(size, 0.0) + count
        fc.io_time += c.get(f"{prefix}_F_READ_TIME", 0.0) + c.get(f"{prefix}_F_WRITE_TIME", 0.0)
        for op in ("READ", "WRITE"):
            start, end = c.get(f"{prefix}_F_{op}_START_TIMESTAMP", 0.0), c.get(f"{prefix}_F_{op}_END_TIMESTAMP", 0.0)
            if end > 0:
                starts.append(start)
                ends.append(end)
    if module == "POSIX":
        fc.consecutive = consec
    fc.first_io = min(starts) if starts else None
    fc.last_io = max(ends) if ends else None
    return fc


def read_darshan_counters(path: str | Path, report: Any = None) -> CounterLog:
    """Per-file counters of a Darshan log; ``report`` is an already opened ``DarshanReport`` (optional)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("--trace", f"file {path} does not exist", "pass a Darshan log (.darshan)")
    version = check_version(path)
    if report is None:
        report = open_report(path)
    modules = list(report.modules)
    present = [m for m in COUNTER_MODULES if m in modules]
    if not present:
        raise InputError(str(path), f"has no DXT trace and no POSIX or MPI-IO counters (modules: "
                         f"{', '.join(modules) or 'none'})",
                         "rerun the job with Darshan's POSIX/MPI-IO modules enabled (the default) or with "
                         "DXT_ENABLE_IO_TRACE=1")
    nprocs = int(report.metadata["job"]["nprocs"])
    by_module: dict[str, dict[int, list[tuple[int, dict[str, float]]]]] = {}
    for module in present:
        grouped: dict[int, list[tuple[int, dict[str, float]]]] = {}
        for rank, fid, counters in _records(report, module):
            grouped.setdefault(fid, []).append((rank, counters))
        by_module[module] = grouped
    names = report.name_records  # complete only once the modules' records are read
    files: list[FileCounters] = []
    posix = by_module.get("POSIX", {})
    for fid in sorted(set().union(*[set(g) for g in by_module.values()])):
        name = str(names.get(fid, f"<record {fid}>"))
        mpi = _fold(name, "MPI-IO", by_module["MPI-IO"][fid]) if fid in by_module.get("MPI-IO", {}) else None
        px = _fold(name, "POSIX", posix[fid]) if fid in posix else None
        chosen = mpi if mpi is not None and mpi.requests > 0 else px
        if chosen is None or chosen.requests == 0:
            continue  # opened, stat'ed or never touched: nothing to lay out
        if chosen.module == "MPI-IO" and px is not None and px.requests > 0 and px.consecutive is not None:
            # MPI-IO counts no offsets: borrow the POSIX share of consecutive requests for the same file
            chosen.consecutive = round(chosen.requests * px.consecutive / px.requests)
        files.append(chosen)
    if not files:
        raise InputError(str(path), f"has {' and '.join(present)} records but none read or wrote data",
                         "pass the log of a run that did I/O")
    return CounterLog(path=path, version=version, nprocs=nprocs, files=files, modules=modules)
