"""Synthetic probe output from known parameters: what pfsprobe would report if the platform followed
the cost model exactly, times multiplicative log-normal noise. Used to check that the fit recovers the
parameters it was given, and as a stand-in document where no probe can run (unit tests, dry runs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pfslayout.calibration.design import model_times
from pfslayout.calibration.grid import ProbeGrid
from pfslayout.calibration.measurements import PROBE_FORMAT
from pfslayout.costmodel import CostParams


def model_time(cell: Any, servers: int, params: CostParams, variant: str = "corrected") -> float:
    """Seconds of one repetition of ``cell`` under the model: requests_per_rank × per-request cost, with
    the layout as realised at the cell's request size and the cell's operation (``design.model_times``)."""
    return float(model_times([cell], servers, params, variant)[0])


def simulate_probe(grid: ProbeGrid, params: CostParams, *, noise: float = 0.02, seed: int = 0,
                   variant: str = "corrected", backend: str = "posix") -> dict[str, Any]:
    """A pfsprobe/1 document for ``grid`` with each repetition's time = model × exp(noise·N(0,1))."""
    rng = np.random.default_rng(seed)
    cells = []
    for c in grid.cells:
        base = model_time(c, grid.servers, params, variant)
        times = (base * np.exp(noise * rng.standard_normal(c.repetitions))).tolist()
        q1, med, q3 = np.percentile(times, [25, 50, 75])
        cells.append({
            "layout": c.layout, "g": c.g, "target": f"/probe/{c.layout}" + (f"-g{c.g}" if c.g else ""),
            "op": c.op, "pattern": c.pattern, "sharing": c.sharing, "p": c.p, "m": c.m,
            "request_size": c.request_size, "requests_per_rank": c.requests_per_rank,
            "repetitions": c.repetitions, "times": times, "median": float(med), "min": float(min(times)),
            "max": float(max(times)), "iqr": float(q3 - q1),
        })
    return {
        "format": PROBE_FORMAT,
        "tool": {"name": "pfslayout.calibration.synthetic", "version": "1", "mpi": "none (simulated)"},
        "started": "1970-01-01T00:00:00Z",
        "platform": {"ranks": grid.nodes * grid.ranks_per_node, "nodes": grid.nodes,
                     "ranks_per_node": grid.ranks_per_node, "servers": grid.servers, "backend": backend},
        "cells": cells,
    }
