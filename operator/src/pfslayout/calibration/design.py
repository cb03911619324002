"""The linear system behind calibration: one row per cell, one column per parameter.

For a fixed cell the model time of one repetition is ``requests_per_rank × (ce·e + cv·v + ca·α + cb·β)``
with α = α_seq or α_rand by pattern, and ce, cv, ca, cb from ``pfslayout.costmodel.coefficients`` — the
same function the planner costs with, so fit and prediction cannot disagree about the table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pfslayout.costmodel import coefficients

PARAMS = ("e", "v", "alpha_seq", "alpha_rand", "beta")


class CellLike(Protocol):
    # read-only members, so frozen dataclasses and pydantic models both satisfy it
    @property
    def layout(self) -> str: ...
    @property
    def g(self) -> int | None: ...
    @property
    def p(self) -> int: ...
    @property
    def m(self) -> int: ...
    @property
    def request_size(self) -> int: ...
    @property
    def requests_per_rank(self) -> int: ...

    @property
    def random(self) -> bool: ...


@dataclass(frozen=True)
class CellConfig:
    """The configuration a cell stands for — what the model's coefficients depend on. Grid cells (to be
    measured) and measured cells extend it, so both read the same fields the same way."""

    layout: str
    g: int | None
    op: str
    pattern: str
    p: int
    m: int
    request_size: int
    requests_per_rank: int

    @property
    def random(self) -> bool:
        return self.pattern == "random"


def design_matrix(cells: Iterable[CellLike], servers: int, variant: str = "corrected") -> np.ndarray:
    """Rows = cells, columns = (e, v, α_seq, α_rand, β); entry = seconds per unit of that parameter."""
    rows = []
    for c in cells:
        co = coefficients(c.layout, c.p, servers, c.m, c.request_size, c.g, variant=variant)
        k = float(c.requests_per_rank)
        ca = float(co.ca)
        rows.append([k * float(co.ce), k * float(co.cv), 0.0 if c.random else k * ca, k * ca if c.random else 0.0,
                     k * float(co.cb)])
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(PARAMS))


@dataclass(frozen=True)
class Identifiability:
    """What a design can tell apart. ``rank`` of the column-scaled matrix (5 = all identified)."""

    rank: int
    condition: float  # of the column-scaled matrix over its non-zero columns; inf when rank-deficient
    unused: tuple[str, ...]  # parameters no cell exercises (all-zero column)
    confounded: tuple[tuple[str, ...], ...]  # groups only identifiable as a combination

    @property
    def identified(self) -> tuple[str, ...]:
        bad = set(self.unused) | {p for group in self.confounded for p in group}
        return tuple(p for p in PARAMS if p not in bad)

    def warnings(self) -> list[str]:
        out = [f"{p}: not identified — no cell exercises it, so its fitted value carries no information"
               for p in self.unused]
        for group in self.confounded:
            out.append(f"{', '.join(group)}: not identified separately — the cells move them together "
                       "(collinear columns); only their combination is fitted")
        return out


def identifiability(matrix: np.ndarray, tol: float = 1e-9) -> Identifiability:
    """Rank and conditioning of a (weighted) design matrix, and which parameters it cannot identify."""
    scale = np.linalg.norm(matrix, axis=0)
    used = scale > 0
    unused = tuple(p for p, u in zip(PARAMS, used) if not u)
    if not np.any(used):
        return Identifiability(0, float("inf"), unused, ())
    scaled = matrix[:, used] / scale[used]
    _, sv, vt = np.linalg.svd(scaled, full_matrices=True)
    sv_full = np.zeros(vt.shape[0])
    sv_full[: sv.size] = sv
    small = sv_full <= tol * sv_full.max()
    rank = int(np.count_nonzero(~small))
    names = [p for p, u in zip(PARAMS, used) if u]
    # The projector onto the null space does not depend on which basis the SVD returned: parameter j is
    # identified iff its diagonal entry is 0, and two parameters are confounded together iff linked
    # through non-zero off-diagonal entries (connected components).
    null = vt[small]
    proj = null.T @ null
    link = np.abs(proj) > 1e-6
    confounded: list[tuple[str, ...]] = []
    seen: set[int] = set()
    for j in range(len(names)):
        if j in seen or not link[j, j]:
            continue
        component, frontier = {j}, [j]
        while frontier:
            k = frontier.pop()
            for nxt in np.flatnonzero(link[k]):
                if int(nxt) not in component:
                    component.add(int(nxt))
                    frontier.append(int(nxt))
        seen |= component
        confounded.append(tuple(names[i] for i in sorted(component)))
    condition = float("inf") if rank < len(names) else float(sv_full.max() / sv_full.min())
    return Identifiability(rank, condition, unused, tuple(confounded))
