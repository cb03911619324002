"""Per-server storage parameters for heterogeneous servers (seed 002's setting): α_seq, α_rand and β of
each server, fitted from probes pinned to that server, with the network (e, v) held at the global fit.

A per-server probe measures a 1-DV target whose files all sit on server j (OrangeFS ``layout`` =
list with ``server_list`` = that server), so its document says ``platform.servers = 1``. For such a cell
the model time is ``requests_per_rank × (ce·e + cv·v + ca·α + cb·β)`` with n = 1; e and v come from the
global fit, and what is left is linear in (α_seq, α_rand, β) — fitted by NNLS exactly like the global
fit (relative weighting, scaled columns). The result becomes ``CostParams.servers``: one override per
server index, a server without its own probe inheriting the global values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pfslayout.calibration.design import PARAMS, design_matrix, identifiability
from pfslayout.calibration.grid import GridCell, ProbeGrid, requests_for
from pfslayout.calibration.measurements import Measurements
from pfslayout.costmodel import CostParams, ServerParams
from pfslayout.errors import InputError

STORAGE = ("alpha_seq", "alpha_rand", "beta")
_COLS = [PARAMS.index(p) for p in STORAGE]


@dataclass
class ServerFit:
    index: int
    values: dict[str, float | None]  # None: not identified or pinned at 0 — the server inherits the global value
    cells: int
    r2: float | None
    median_relative_error: float
    max_relative_error: float
    path: str
    warnings: list[str] = field(default_factory=list)

    def quality(self) -> dict[str, Any]:
        return {"index": self.index, "cells": self.cells, "r2": self.r2,
                "median_relative_error": self.median_relative_error,
                "max_relative_error": self.max_relative_error, "source": self.path}


def server_grid(ranks_per_node: int, *, sizes: tuple[int, ...] = (4096, 65536, 1 << 20, 4 << 20),
                ops: tuple[str, ...] = ("write", "read"), requests_per_rank: int = 16,
                repetitions: int = 5, min_bytes_per_rank: int = 0) -> ProbeGrid:
    """The cells of one per-server probe: 1-DV on a single server (n = 1), p = 1, 2, 4, … packed on one
    node, every size, both patterns — with e and v known this identifies α_seq, α_rand and β."""
    ps = sorted({1 << k for k in range(ranks_per_node.bit_length()) if 1 << k <= ranks_per_node} | {ranks_per_node})
    cells = [GridCell("1-DV", None, op, pattern, p, p, s, requests_for(s, requests_per_rank, min_bytes_per_rank),
                      repetitions)
             for p in ps for s in sizes for pattern in ("sequential", "random") for op in ops]
    design = identifiability(design_matrix(cells, 1)[:, _COLS], names=STORAGE)
    return ProbeGrid(servers=1, nodes=1, ranks_per_node=ranks_per_node, cells=cells, design=design)


def fit_server(index: int, base: CostParams, m: Measurements, *, variant: str = "corrected",
               weighting: str = "relative") -> ServerFit:
    where = m.path or f"server {index}"
    if m.servers != 1:
        raise InputError(f"{where}: platform.servers", f"is {m.servers}; a per-server probe targets one server",
                         "probe a 1-DV directory pinned to that server and record servers = 1")
    cells = m.cells
    if not cells:
        raise InputError(where, "has no cells", "measure the per-server grid")
    y = np.array([c.time for c in cells], dtype=np.float64)
    if weighting == "relative":
        bad = y <= 0
        if np.any(bad):
            raise InputError(f"{where}: {cells[int(np.argmax(bad))].source}", "measured time must be positive")
        w = 1.0 / y
    else:
        w = np.ones_like(y)
    shared = base.e_shared is not None
    A = design_matrix(cells, 1, variant, shared=shared)
    # with per-operation global parameters a write's messages cost e_write (the server's own fit below keeps
    # one β for both operations); with shared cores every message also costs the global e_shared
    e_of = np.array([base.for_op("write" if c.op == "write" else "read").e for c in cells])
    network = A[:, 0] * e_of + A[:, 1] * base.v + (A[:, -1] * base.e_shared if base.e_shared is not None else 0.0)
    B = A[:, _COLS]
    Bw = B * w[:, None]
    warnings: list[str] = []
    short = int(np.count_nonzero(network >= y))
    if short:
        warnings.append(f"server {index}: the global e and v alone exceed {short} of {len(y)} measured times; "
                        "this server's network differs from the global fit")
    padded = np.zeros((len(y), len(PARAMS)))
    padded[:, _COLS] = Bw
    design = identifiability(padded)
    unidentified = set(STORAGE) - set(design.identified)
    warnings += [f"server {index}: {w_}" for w_ in design.warnings() if not w_.startswith(("e:", "v:"))]
    scale = np.linalg.norm(Bw, axis=0)
    scale[scale == 0] = 1.0
    from scipy.optimize import nnls  # here: scipy costs the operator ~40 MB until a fit runs

    xs, _ = nnls(Bw / scale, (y - network) * w, maxiter=50 * len(STORAGE))
    x = xs / scale
    predicted = network + B @ x
    residual = y - predicted
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = None if len(y) < 2 or ss_tot == 0 else 1.0 - float(np.sum(residual**2)) / ss_tot
    rel = np.abs(residual) / y if np.all(y > 0) else np.abs(residual) / np.where(y > 0, y, np.nan)
    values: dict[str, float | None] = {}
    for name, value in zip(STORAGE, x):
        if name in unidentified:
            values[name] = None
        elif value == 0.0:
            values[name] = None
            warnings.append(f"server {index}: {name} fitted at the bound 0; the server keeps the global value")
        else:
            values[name] = float(value)
    return ServerFit(index=index, values=values, cells=len(y), r2=r2,
                     median_relative_error=float(np.nanmedian(rel)), max_relative_error=float(np.nanmax(rel)),
                     path=where, warnings=warnings)


def with_servers(base: CostParams, fits: list[ServerFit], servers: int) -> CostParams:
    """``base`` with one ``ServerParams`` per server index 0..servers-1 (empty = inherit)."""
    by_index = {f.index: f for f in fits}
    bad = [i for i in by_index if not 0 <= i < servers]
    if bad:
        raise InputError("--server-measurements", f"server index {bad[0]} is outside 0..{servers - 1}",
                         f"index the {servers} servers from 0")
    overrides = [ServerParams.model_validate({k: v for k, v in by_index[i].values.items() if v is not None})
                 if i in by_index else ServerParams() for i in range(servers)]
    return base.model_copy(update={"servers": overrides})
