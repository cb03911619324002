"""The lab's two grids.

* **Calibration**: the core's designed grid (``pfslayout calibrate --design --profile ...``, the grid the
  operator's CostCalibration runs), as pfsprobe grid files.
* **Validation**: disjoint from it — other request sizes and other process counts — with every layout
  of the server count (1-DH, 1-DV, 2-D for each divisor g), so each configuration is a contest between
  layouts, and the file system's default layout beside them as the baseline (``BASELINE``: measured,
  never a candidate). It is run in rounds of one repetition each (``runs.run_rounds``), so the layouts of a
  configuration are measured interleaved in time rather than back to back, and drift of the shared
  machine spreads over all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pfslab.product import pfslayout_json
from pfslab.servers import MOUNT
from pfslayout.calibration.grid import layout_key, requests_for, useful_groups
from pfslayout.calibration.measurements import BASELINE
from pfslayout.units import parse_sizes

# Between the calibration profiles' sizes and none of them (quick: 8 KiB, 1 MiB, 4 MiB; standard: 4 KiB,
# 64 KiB, 1 MiB, 4 MiB), so `lab validate` and the product loop score configurations no calibration measured.
VALIDATION_SIZES_ARG = "16K,256K,2M"  # as the command lines take it (`lab validate --sizes`, product loop)
VALIDATION_SIZES = tuple(parse_sizes(VALIDATION_SIZES_ARG))
VALIDATION_PROCS = (3, 6)  # not powers of two, not n or 2n: none of the calibration grid's process counts
# Each rank moves at least this much per repetition, in both grids (the core's ``requests_for``, which
# the operator's CostCalibration applies as spec.grid.minBytesPerRank).
MIN_BYTES_PER_RANK = 4 << 20
CALIBRATION_PROCS = 4  # ranks of the calibration's one client node: p = 1, 2, 4


def targets(servers: int, tag: str) -> dict[str, str]:
    """Layout key → directory under the lab's mount, one per layout of ``servers``."""
    keys = [layout_key("1-DH", None), layout_key("1-DV", None)] + [layout_key("2-D", g) for g in useful_groups(servers)]
    return {k: f"{MOUNT}/{tag}/{k.replace(':', '-g')}" for k in keys}


def calibration(servers: int, profile: str, ranks: int = CALIBRATION_PROCS, sizes: Sequence[int] | None = None,
                nodes: int = 1, min_bytes: int = MIN_BYTES_PER_RANK) -> list[dict[str, Any]]:
    """pfsprobe grid files of the designed calibration grid for ``nodes`` client nodes of ``ranks`` ranks
    (one file per placement: with several nodes, ranks packed on one node and spread over all), each
    split so that every rank moves at least ``min_bytes`` per repetition (the core's designed grid does it)."""
    args = ["calibrate", "--design", "--servers", str(servers), "--nodes", str(nodes), "--ranks-per-node", str(ranks),
            "--profile", profile, "--backend", "pvfs2", "--min-bytes", str(min_bytes), "--json"]
    if sizes:
        args += ["--sizes", ",".join(str(s) for s in sizes)]
    for key, path in targets(servers, "calibrate").items():
        args += ["--target", f"{key}={path}"]
    grids: list[dict[str, Any]] = pfslayout_json(*args)["pfsprobe_grids"]
    return grids


def by_requests(grid: dict[str, Any], min_bytes: int) -> list[dict[str, Any]]:
    """``grid`` as one grid per requests-per-rank count: its own count, raised for the sizes that would
    move less than ``min_bytes`` per rank (the fit reads each cell's count from the probe's output)."""
    by_count: dict[int, list[int]] = {}
    for size in sorted(grid["request_sizes"]):
        by_count.setdefault(requests_for(size, grid["requests_per_rank"], min_bytes), []).append(size)
    return [{**grid, "request_sizes": group, "requests_per_rank": count}
            for count, group in sorted(by_count.items(), key=lambda kv: kv[1][0])]


def validation(servers: int, *, sizes: Sequence[int] = VALIDATION_SIZES, procs: Sequence[int] = VALIDATION_PROCS,
               requests: int = 16, min_bytes: int = MIN_BYTES_PER_RANK,
               patterns: Sequence[str] = ("sequential", "random"), ops: Sequence[str] = ("write", "read"),
               sharing: Sequence[str] = ("file-per-process",), nodes: int = 1) -> list[dict[str, Any]]:
    """pfsprobe grid files (one repetition per cell: the rounds repeat them) over every layout, one per
    requests-per-rank count (a grid file has one; ``requests_for`` gives each size its own); with several
    client nodes the ranks are spread over them (m = ⌈p/nodes⌉), so m differs from p."""
    return by_requests({
        "backend": "pvfs2",
        "servers": servers,
        "targets": [{"layout": k.split(":")[0], "path": path, "g": int(k.split(":")[1]) if ":" in k else None}
                    for k, path in targets(servers, "validate").items()]
                   + [{"layout": BASELINE, "path": f"{MOUNT}/validate/{BASELINE}", "g": None}],
        "request_sizes": sorted(sizes),
        "patterns": list(patterns),
        "sharing": list(sharing),
        "ops": list(ops),
        "procs": sorted(procs),
        "placement": "spread" if nodes > 1 else "packed",
        "repetitions": 1,
        "requests_per_rank": requests,
    }, min_bytes)


def disjoint(calibration_grids: Sequence[dict[str, Any]], validation_grids: Sequence[dict[str, Any]]) -> list[str]:
    """What the validation grids share with the calibration's: request sizes and process counts must not
    be reused (the point is to predict configurations the fit never saw). Empty when disjoint."""
    sizes = {s for g in calibration_grids for s in g["request_sizes"]}
    procs = {p for g in calibration_grids for p in g["procs"]}
    shared = []
    if both := sizes & {s for g in validation_grids for s in g["request_sizes"]}:
        shared.append(f"request sizes {sorted(both)}")
    if both := procs & {p for g in validation_grids for p in g["procs"]}:
        shared.append(f"process counts {sorted(both)}")
    return shared

