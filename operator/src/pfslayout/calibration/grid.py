"""A designed probe grid that identifies all five parameters (e, v, α_seq, α_rand, β).

Candidates are every useful configuration the platform can run: layouts 1-DH, 1-DV and 2-D for each
divisor g of n with 1 < g < n; process counts p = powers of two up to the platform's ranks (plus n,
2n and the maximum); for each p the extreme placements m = ⌈p/nodes⌉ (spread) and m = min(p,
ranks_per_node) (packed); request sizes; sequential and random. From those, a greedy D-optimal
selection (maximise det of the information matrix, one configuration at a time) keeps a small set, each
measured for every requested op. The grid is then *checked*: its design matrix — weighted exactly as the
fit weights it — must have rank 5, or ``design_grid`` raises naming what the platform cannot separate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from pfslayout.calibration.design import PARAMS, Identifiability, design_matrix, identifiability
from pfslayout.costmodel import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError

GRID_FORMAT = "pfsprobe-grid/1"
DEFAULT_SIZES = (4096, 65536, 1 << 20, 4 << 20)


@dataclass(frozen=True)
class GridCell:
    layout: str
    g: int | None
    op: str
    pattern: str
    p: int
    m: int
    request_size: int
    requests_per_rank: int
    repetitions: int
    sharing: str = "file-per-process"

    @property
    def random(self) -> bool:
        return self.pattern == "random"


@dataclass
class ProbeGrid:
    servers: int
    nodes: int
    ranks_per_node: int
    cells: list[GridCell]
    design: Identifiability

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": GRID_FORMAT,
            "platform": {"servers": self.servers, "nodes": self.nodes, "ranks_per_node": self.ranks_per_node},
            "design": {"rank": self.design.rank, "condition": self.design.condition,
                       "identified": list(self.design.identified)},
            "cells": [asdict(c) for c in self.cells],
        }


def useful_groups(servers: int) -> list[int]:
    """2-D group counts worth probing: divisors of n strictly between 1 and n (g=1 is 1-DH, g=n is 1-DV)."""
    return [g for g in range(2, servers) if servers % g == 0]


def _process_counts(servers: int, max_ranks: int) -> list[int]:
    counts = {1 << k for k in range(max_ranks.bit_length()) if 1 << k <= max_ranks}
    counts |= {c for c in (servers, 2 * servers, max_ranks) if 1 <= c <= max_ranks}
    return sorted(counts)


def candidates(servers: int, nodes: int, ranks_per_node: int, sizes: Sequence[int],
               patterns: Sequence[str], requests_per_rank: int, repetitions: int) -> list[GridCell]:
    layouts: list[tuple[str, int | None]] = [("1-DH", None), ("1-DV", None)]
    layouts += [("2-D", g) for g in useful_groups(servers)]
    out: list[GridCell] = []
    for p in _process_counts(servers, nodes * ranks_per_node):
        for m in sorted({-(-p // nodes), min(p, ranks_per_node)}):
            for layout, g in layouts:
                for s in sizes:
                    for pattern in patterns:
                        out.append(GridCell(layout, g, "read", pattern, p, m, int(s), requests_per_rank, repetitions))
    return out


def _greedy_d_optimal(rows: np.ndarray, budget: int) -> list[int]:
    """Pick rows one at a time maximising log det(ε·I + Σ r rᵀ) (the classic sequential D-optimal
    step: the row with the largest rᵀ M⁻¹ r)."""
    k = rows.shape[1]
    info = 1e-6 * np.eye(k)
    chosen: list[int] = []
    available = np.ones(rows.shape[0], dtype=bool)
    for _ in range(min(budget, rows.shape[0])):
        inv = np.linalg.inv(info)
        gain = np.einsum("ij,jk,ik->i", rows, inv, rows)
        gain[~available] = -np.inf
        best = int(np.argmax(gain))
        chosen.append(best)
        available[best] = False
        info += np.outer(rows[best], rows[best])
    return chosen


def design_grid(servers: int, nodes: int, ranks_per_node: int, *, sizes: Sequence[int] = DEFAULT_SIZES,
                ops: Sequence[str] = ("read", "write"), patterns: Sequence[str] = ("sequential", "random"),
                requests_per_rank: int = 16, repetitions: int = 5, max_configs: int = 24,
                variant: str = "corrected", reference: CostParams = SEED_ETHERNET) -> ProbeGrid:
    """A small grid guaranteed (checked) to identify e, v, α_seq, α_rand and β on this platform."""
    for name, value in (("servers", servers), ("nodes", nodes), ("ranks_per_node", ranks_per_node),
                        ("requests_per_rank", requests_per_rank), ("repetitions", repetitions),
                        ("max_configs", max_configs)):
        if value < 1:
            raise InputError(name, f"must be at least 1 (got {value})")
    if not sizes or any(s < 1 for s in sizes):
        raise InputError("sizes", f"must be positive byte counts (got {list(sizes)})")
    for op in ops:
        if op not in ("read", "write"):
            raise InputError("ops", f"unknown op {op!r}", "use read and/or write")
    for pattern in patterns:
        if pattern not in ("sequential", "random"):
            raise InputError("patterns", f"unknown pattern {pattern!r}", "use sequential and/or random")
    pool = candidates(servers, nodes, ranks_per_node, sizes, patterns, requests_per_rank, repetitions)
    A = design_matrix(pool, servers, variant)
    ref = np.array([getattr(reference, "alpha_rand" if p == "alpha_rand" else p) for p in PARAMS])
    weighted = A / (A @ ref)[:, None]  # the fit's relative weighting, at reference parameter values
    scale = np.linalg.norm(weighted, axis=0)
    scale[scale == 0] = 1.0
    chosen = _greedy_d_optimal(weighted / scale, max_configs)
    configs = sorted((pool[i] for i in chosen), key=lambda c: (c.layout, c.g or 0, c.p, c.m, c.request_size,
                                                                c.pattern))
    cells = [GridCell(c.layout, c.g, op, c.pattern, c.p, c.m, c.request_size, c.requests_per_rank, c.repetitions)
             for c in configs for op in ops]
    rows = design_matrix(cells, servers, variant)
    design = identifiability(rows / (rows @ ref)[:, None])
    if design.rank < len(PARAMS) or design.unused:
        missing = design.warnings()
        raise InputError(
            "grid", f"with servers={servers}, nodes={nodes}, ranks_per_node={ranks_per_node} the probes cannot "
            f"identify every parameter ({'; '.join(missing)})",
            "probe with at least 2 servers (with one server the server-side serial counts decide every "
            "term, so network and storage cannot be told apart) and keep both sequential and random patterns")
    return ProbeGrid(servers=servers, nodes=nodes, ranks_per_node=ranks_per_node, cells=cells, design=design)
