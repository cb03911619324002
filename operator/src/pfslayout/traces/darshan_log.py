"""Darshan logs with DXT (extended tracing) via pydarshan, whose wheel carries libdarshan-util.

DXT_MPIIO is preferred (it is what the cost model and the shim see: one record per MPI-IO call); a log
with only DXT_POSIX is read from that. A log without DXT (``DXT_ENABLE_IO_TRACE`` unset when the job
ran) has no per-request data and is rejected with the fix. Host names give the node of each rank.

DXT segments do not say whether a call was collective; the log's MPI-IO counters do, per file (and rank,
unless Darshan reduced a shared file to one record). A DXT_MPIIO file's reads (writes) are marked
collective when its counters show only collective ones; with mixed calls they stay unmarked, since no
segment can be attributed (the planner then treats them as independent).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.darshan_open import open_report
from pfslayout.traces.model import OP_READ, OP_WRITE, Trace

MODULES = ("DXT_MPIIO", "DXT_POSIX")


def all_collective(counters: Mapping[str, Any], op: str) -> bool:
    """Whether one MPI-IO counter record's READS or WRITES (``op``) were all collective calls."""
    coll = int(counters.get(f"MPIIO_COLL_{op}", 0))
    other = sum(int(counters.get(f"MPIIO_{kind}_{op}", 0)) for kind in ("INDEP", "SPLIT", "NB"))
    return coll > 0 and other == 0


def _collective_by_record(report: Any) -> dict[tuple[int, int], tuple[bool, bool]]:
    """(rank, record id) -> (reads all collective, writes all collective), from the MPI-IO module;
    rank -1 is Darshan's one record for a file every rank shared."""
    if "MPI-IO" not in report.modules:
        return {}
    report.mod_read_all_records("MPI-IO")
    frame = report.records["MPI-IO"].to_df()["counters"]
    return {(int(row["rank"]), int(row["id"])): (all_collective(row, "READS"), all_collective(row, "WRITES"))
            for row in frame.to_dict("records")}


def read_darshan_log(path: str | Path, module: str | None = None) -> Trace:
    path = Path(path)
    if not path.is_file():
        raise InputError("--trace", f"file {path} does not exist", "pass a Darshan log (.darshan)")
    if module is not None and module not in MODULES:
        raise InputError("module", f"unknown DXT module {module!r}", f"use one of {', '.join(MODULES)}")
    report = open_report(path)
    present = [m for m in MODULES if m in report.modules]
    chosen = module or (present[0] if present else None)
    if chosen is None or chosen not in present:
        raise InputError(str(path), f"has no {module or 'DXT'} trace (modules: {', '.join(report.modules) or 'none'})",
                         "plan from its counters with pfslayout plan --format darshan (planner.plan_from_file), "
                         "or rerun the job with DXT_ENABLE_IO_TRACE=1 in the environment of every rank")
    report.mod_read_all_dxt_records(chosen)
    records = report.records[chosen].to_df()
    names = report.name_records
    nprocs = int(report.metadata["job"]["nprocs"])
    coll = _collective_by_record(report) if chosen == "DXT_MPIIO" else {}

    hosts: dict[str, int] = {}
    node_by_rank: dict[int, int] = {}
    files: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("rank", "op", "offset", "size", "start", "end", "file_id",
                                                         "collective")}
    for rec in records:  # one per (rank, file): a loop over records, never over requests
        rank = int(rec["rank"])
        node_by_rank[rank] = hosts.setdefault(str(rec.get("hostname", "")), len(hosts))
        fid = files.setdefault(str(names.get(rec["id"], f"<record {rec['id']}>")), len(files))
        flags = coll.get((rank, int(rec["id"]))) or coll.get((-1, int(rec["id"]))) or (False, False)
        for (key, op), is_coll in zip((("read_segments", OP_READ), ("write_segments", OP_WRITE)), flags, strict=True):
            seg = rec[key]
            if len(seg) == 0:
                continue
            k = len(seg)
            cols["rank"].append(np.full(k, rank, dtype=np.int32))
            cols["op"].append(np.full(k, op, dtype=np.uint8))
            cols["offset"].append(seg["offset"].to_numpy(dtype=np.int64))
            cols["size"].append(seg["length"].to_numpy(dtype=np.int64))
            cols["start"].append(seg["start_time"].to_numpy(dtype=np.float64))
            cols["end"].append(seg["end_time"].to_numpy(dtype=np.float64))
            cols["file_id"].append(np.full(k, fid, dtype=np.int32))
            cols["collective"].append(np.full(k, is_coll, dtype=bool))
    if not cols["rank"]:
        raise InputError(str(path), f"{chosen} holds no read or write segments", "trace a run that does I/O")
    arrays = {k: np.concatenate(v) for k, v in cols.items()}
    node_of_rank = np.full(max(max(node_by_rank) + 1, nprocs), -1, dtype=np.int32)
    for rank, node in node_by_rank.items():
        node_of_rank[rank] = node
    return Trace(rank=arrays["rank"], op=arrays["op"], offset=arrays["offset"], size=arrays["size"],
                 start=arrays["start"], end=arrays["end"], file_id=arrays["file_id"], files=list(files),
                 node_of_rank=node_of_rank, nprocs=nprocs,
                 collective=arrays["collective"] if chosen == "DXT_MPIIO" else None)
