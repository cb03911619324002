"""A designed probe grid that identifies all five parameters (e, v, α_seq, α_rand, β).

The grid is the factorial pfsprobe runs (layouts × process counts × request sizes × patterns × ops, once
per placement): layouts 1-DH, 1-DV and 2-D for every divisor g of n with 1 < g < n; process counts
p = powers of two up to the platform's ranks plus n, 2n and the maximum; placements ``packed`` (first p
ranks, m = min(p, ranks_per_node)) and, with more than one node, ``spread`` (round-robin over nodes,
m = ⌈p/nodes⌉) — the two extremes of the client-side count m. Optionally (``max_configs``) a greedy
D-optimal selection keeps only the most informative configurations.

Either way the grid is then *checked*: its design matrix, weighted exactly as the fit weights it, must
have rank 5, or ``design_grid`` raises naming what this platform cannot separate (e.g. one server: the
server-side serial counts decide every term, so network and storage are collinear).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from pfslayout.calibration.design import PARAMS, CellConfig, Identifiability, design_matrix, identifiability
from pfslayout.costmodel import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.request_sizes import DEFAULT_SIZES  # the grid's default sizes: one home, no imports

GRID_FORMAT = "pfsprobe-grid/1"


@dataclass(frozen=True)
class GridCell(CellConfig):
    repetitions: int
    sharing: str = "file-per-process"
    placement: str = "packed"


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

    def pfsprobe_grids(self, targets: dict[str, str], backend: str = "posix") -> list[dict[str, Any]]:
        """pfsprobe ``--grid`` documents (one per placement and requests-per-rank count) that run every
        cell of this grid.

        ``targets`` maps a layout key (``1-DH``, ``1-DV``, ``2-D:G``) to the directory realising it.
        pfsprobe runs the factorial of the lists it is given, so for a compact (D-optimal) grid this is
        the factorial closure of the selected cells — a superset; the fit uses whatever was measured.
        A document has one requests-per-rank count, so sizes raised by ``min_bytes_per_rank`` get their own.
        """
        out = []
        groups = sorted({(c.placement, c.requests_per_rank) for c in self.cells},
                        key=lambda g: (g[0] != "packed", -g[1]))
        for placement, requests in groups:
            cells = [c for c in self.cells if c.placement == placement and c.requests_per_rank == requests]
            keys = sorted({layout_key(c.layout, c.g) for c in cells})
            missing = [k for k in keys if k not in targets]
            if missing:
                raise InputError("targets", f"no directory for layout(s) {', '.join(missing)}",
                                 "map every layout of the grid to a directory that realises it")
            out.append({
                "backend": backend,
                "servers": self.servers,
                "targets": [_target(k, targets[k]) for k in keys],
                "request_sizes": sorted({c.request_size for c in cells}),
                "patterns": sorted({c.pattern for c in cells}, reverse=True),
                "sharing": sorted({c.sharing for c in cells}),
                "ops": sorted({c.op for c in cells}, reverse=True),
                "procs": sorted({c.p for c in cells}),
                "placement": placement,
                "repetitions": max(c.repetitions for c in cells),
                "requests_per_rank": requests,
            })
        return out


def layout_key(layout: str, g: int | None) -> str:
    return f"{layout}:{g}" if layout == "2-D" else layout


def _target(key: str, path: str) -> dict[str, Any]:
    layout, _, g = key.partition(":")
    return {"layout": layout, "path": path, "g": int(g) if g else None}


def useful_groups(servers: int) -> list[int]:
    """2-D group counts worth probing: divisors of n strictly between 1 and n (g=1 is 1-DH, g=n is 1-DV)."""
    return [g for g in range(2, servers) if servers % g == 0]


def _process_counts(servers: int, max_ranks: int) -> list[int]:
    counts = {1 << k for k in range(max_ranks.bit_length()) if 1 << k <= max_ranks}
    counts |= {c for c in (servers, 2 * servers, max_ranks) if 1 <= c <= max_ranks}
    return sorted(counts)


def placements(p: int, nodes: int, ranks_per_node: int) -> list[tuple[str, int]]:
    """(placement, m) pairs pfsprobe can run p ranks with: packed fills a node first, spread deals
    ranks round-robin over nodes (shim/probe topology_select); equal m → only packed."""
    packed = min(p, ranks_per_node)
    spread = -(-p // nodes)
    return [("packed", packed)] + ([("spread", spread)] if spread != packed else [])


def requests_for(size: int, requests_per_rank: int, min_bytes_per_rank: int = 0) -> int:
    """Requests per rank of a cell of request ``size``: ``requests_per_rank``, raised so that each rank moves
    at least ``min_bytes_per_rank`` per repetition. Why: 16 requests of 16 KiB run 12-35 ms, and the
    performance lab measured such cells spreading 30-270% over repetitions (docs/results.md) — noise that
    decided every layout the model missed; 4 MiB per rank made the same cells 0.2-0.5 s and 1-8% spread."""
    return max(requests_per_rank, -(-min_bytes_per_rank // size))


def candidates(servers: int, nodes: int, ranks_per_node: int, sizes: Sequence[int], patterns: Sequence[str],
               ops: Sequence[str], requests_per_rank: int, repetitions: int,
               min_bytes_per_rank: int = 0) -> list[GridCell]:
    layouts: list[tuple[str, int | None]] = [("1-DH", None), ("1-DV", None)]
    layouts += [("2-D", g) for g in useful_groups(servers)]
    out: list[GridCell] = []
    for p in _process_counts(servers, nodes * ranks_per_node):
        for placement, m in placements(p, nodes, ranks_per_node):
            for layout, g in layouts:
                for s in sizes:
                    for pattern in patterns:
                        for op in ops:
                            out.append(GridCell(layout, g, op, pattern, p, m, int(s),
                                                requests_for(int(s), requests_per_rank, min_bytes_per_rank),
                                                repetitions, placement=placement))
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


def _relative_rows(cells: Sequence[GridCell], servers: int, variant: str, reference: CostParams) -> np.ndarray:
    A = design_matrix(cells, servers, variant)
    ref = np.array([getattr(reference, p) for p in PARAMS])
    return np.asarray(A / (A @ ref)[:, None])  # the fit's relative weighting, at reference parameter values


def design_grid(servers: int, nodes: int, ranks_per_node: int, *, sizes: Sequence[int] = DEFAULT_SIZES,
                ops: Sequence[str] = ("write", "read"), patterns: Sequence[str] = ("sequential", "random"),
                requests_per_rank: int = 16, repetitions: int = 5, max_configs: int | None = None,
                variant: str = "corrected", reference: CostParams = SEED_ETHERNET,
                min_bytes_per_rank: int = 0) -> ProbeGrid:
    """A grid checked to identify e, v, α_seq, α_rand and β on this platform (else InputError).

    ``max_configs`` None → the full factorial pfsprobe runs; an integer → that many configurations
    chosen greedily for D-optimality (each measured for every op). ``min_bytes_per_rank`` raises the
    requests per rank of small sizes (``requests_for``)."""
    for name, value in (("servers", servers), ("nodes", nodes), ("ranks_per_node", ranks_per_node),
                        ("requests_per_rank", requests_per_rank), ("repetitions", repetitions)):
        if value < 1:
            raise InputError(name, f"must be at least 1 (got {value})")
    if min_bytes_per_rank < 0:
        raise InputError("min_bytes_per_rank", f"must be 0 or more bytes (got {min_bytes_per_rank})")
    if max_configs is not None and max_configs < 1:
        raise InputError("max_configs", f"must be at least 1 (got {max_configs})")
    if not sizes or any(s < 1 for s in sizes):
        raise InputError("sizes", f"must be positive byte counts (got {list(sizes)})")
    if not ops or any(op not in ("read", "write") for op in ops):
        raise InputError("ops", f"must be read and/or write (got {list(ops)})")
    if not patterns or any(pt not in ("sequential", "random") for pt in patterns):
        raise InputError("patterns", f"must be sequential and/or random (got {list(patterns)})")
    cells = candidates(servers, nodes, ranks_per_node, sizes, patterns, ops, requests_per_rank, repetitions,
                       min_bytes_per_rank)
    if max_configs is not None:
        # op does not enter the model: select over configurations, then measure each for every op
        configs = [c for c in cells if c.op == ops[0]]
        weighted = _relative_rows(configs, servers, variant, reference)
        scale = np.linalg.norm(weighted, axis=0)
        scale[scale == 0] = 1.0
        chosen = sorted(_greedy_d_optimal(weighted / scale, max_configs))
        cells = [replace(configs[i], op=op) for i in chosen for op in ops]
    design = identifiability(_relative_rows(cells, servers, variant, reference))
    if design.rank < len(PARAMS) or design.unused:
        raise InputError(
            "grid", f"with servers={servers}, nodes={nodes}, ranks_per_node={ranks_per_node} the probes cannot "
            f"identify every parameter ({'; '.join(design.warnings())})",
            "probe with at least 2 servers (with one server the server-side serial counts decide every "
            "term, so network and storage cannot be told apart) and keep both sequential and random patterns")
    return ProbeGrid(servers=servers, nodes=nodes, ranks_per_node=ranks_per_node, cells=cells, design=design)
