"""The linear system behind calibration: one row per cell, one column per parameter.

For a fixed cell the model time of one repetition is ``requests_per_rank × (ce·e + cv·v + ca·α + cb·β)``
with α = α_seq or α_rand by pattern, and ce, cv, ca, cb from ``pfslayout.costmodel.coefficients`` — the
same function the planner costs with, so fit and prediction cannot disagree about the table.

Two refinements (issue 13, docs/cost-model.md):
* A cell is costed as the layout its requests *behave* as once the file is realised by the one rule the
  probe, the planner's hints and the operator share (``planner.classify.realised_as``): a request smaller
  than the layout's strip touches fewer servers. Corrected variant only (``printed`` is 003 as printed).
* ``split`` gives writes their own columns: with ``("e", "beta")`` a write cell's message and per-byte
  coefficients go to ``e_write`` and ``beta_write`` instead of ``e`` and ``beta``.
* ``shared`` adds the column of ``e_shared``: the messages all processes send per round (p·nt), which cost
  when clients and servers share cores (docs/cost-model.md "Shared cores").
* ``small`` adds the column of ``v_small_write``: the bytes all processes write per round in requests split
  over two servers or more into pieces below OrangeFS's small-I/O limit (p·s; reads 0), docs/cost-model.md
  "Small writes".

With ``CostParams.overlap`` a cell's time is not the row times the parameters but the larger of its
network columns' and its storage columns' parts (``network_columns``, ``overlapped``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pfslayout.costmodel import CostParams, coefficients
from pfslayout.planner.classify import realised_as

PARAMS = ("e", "v", "alpha_seq", "alpha_rand", "beta")
SPLITTABLE = ("e", "beta")  # the terms writes may have their own value of (lab-facts: ~1.5× per message)
SHARED = "e_shared"
SMALL = "v_small_write"
# T_e + T_x; the rest is T_s + T_rw (docs/cost-model.md "Overlapped ...")
NETWORK = ("e", "v", "e_write", SHARED, SMALL)


def columns(split: Iterable[str] = (), shared: bool = False, small: bool = False) -> tuple[str, ...]:
    """The design's columns: the five parameters, then ``<p>_write`` for each split one, then ``e_shared``, then
    ``v_small_write``."""
    chosen = set(split)
    if chosen - set(SPLITTABLE):
        raise ValueError(f"only {SPLITTABLE} can be split by operation (got {sorted(chosen)})")
    return (PARAMS + tuple(f"{p}_write" for p in SPLITTABLE if p in chosen) + ((SHARED,) if shared else ())
            + ((SMALL,) if small else ()))


def split_of(params: CostParams) -> tuple[str, ...]:
    """Which terms ``params`` gives writes their own value of."""
    return tuple(p for p in SPLITTABLE if getattr(params, f"{p}_write") is not None)


def network_columns(cols: Sequence[str]) -> np.ndarray:
    """Which of the design's columns are on a request's network side (T_e + T_x: e, v, e_write, e_shared,
    v_small_write);
    the others (α_seq, α_rand, β, beta_write) are its storage side — the two sides ``overlap`` compares."""
    return np.array([c in NETWORK for c in cols], dtype=bool)


def overlapped(A: np.ndarray, x: np.ndarray, net: np.ndarray) -> np.ndarray:
    """Each row's larger side: max(A[:, net] @ x[net], A[:, ~net] @ x[~net])."""
    return np.asarray(np.maximum(A[:, net] @ x[net], A[:, ~net] @ x[~net]))


def shared_of(params: CostParams) -> bool:
    """Whether ``params`` charges the messages of a round for shared cores (``e_shared`` set)."""
    return params.e_shared is not None


def small_of(params: CostParams) -> bool:
    """Whether ``params`` charges small split writes (``v_small_write`` set)."""
    return params.v_small_write is not None


def vector(params: CostParams, cols: Sequence[str]) -> np.ndarray:
    """The parameter values in the order of ``cols`` (the design's columns)."""
    return np.array([float(getattr(params, c)) for c in cols], dtype=np.float64)


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


def design_matrix(cells: Iterable[CellLike], servers: int, variant: str = "corrected",
                  split: Iterable[str] = (), shared: bool = False, small: bool = False) -> np.ndarray:
    """Rows = cells, columns = ``columns(split, shared, small)`` (e, v, α_seq, α_rand, β, then any write
    columns, then e_shared, then v_small_write); entry = seconds per unit of that parameter. A cell without
    ``sharing`` is a file-per-process cell, one without ``op`` a read."""
    cols = columns(split, shared, small)
    at = {c: i for i, c in enumerate(cols)}
    rows = []
    for c in cells:
        layout, g = c.layout, c.g
        if variant == "corrected":  # ``printed`` is 003's table as printed, realisation is ours
            layout, g = realised_as(layout, g, servers, getattr(c, "sharing", "file-per-process"), c.request_size)
        co = coefficients(layout, c.p, servers, c.m, c.request_size, g, variant=variant)
        k = float(c.requests_per_rank)
        ca = float(co.ca)
        write = getattr(c, "op", "read") == "write"
        row = [0.0] * len(cols)
        row[at["e_write" if write and "e_write" in at else "e"]] = k * float(co.ce)
        row[at["v"]] = k * float(co.cv)
        row[at["alpha_rand" if c.random else "alpha_seq"]] = k * ca
        row[at["beta_write" if write and "beta_write" in at else "beta"]] = k * float(co.cb)
        if shared:
            row[at[SHARED]] = k * float(co.cm)
        if small and write:
            row[at[SMALL]] = k * float(co.cs)
        rows.append(row)
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(cols))


def model_times(cells: Iterable[CellLike], servers: int, params: CostParams, variant: str = "corrected") -> np.ndarray:
    """Seconds of one repetition of each cell under ``params``: the design's rows times the parameters, so
    predictions and the fit cannot disagree (write and shared-core terms used where ``params`` has them;
    with ``overlap`` each row's larger side)."""
    split, shared, small = split_of(params), shared_of(params), small_of(params)
    cols = columns(split, shared, small)
    A, x = design_matrix(cells, servers, variant, split, shared, small), vector(params, cols)
    return overlapped(A, x, network_columns(cols)) if params.overlap else np.asarray(A @ x)


@dataclass(frozen=True)
class Identifiability:
    """What a design can tell apart. ``rank`` of the column-scaled matrix (5 = all identified)."""

    rank: int
    condition: float  # of the column-scaled matrix over its non-zero columns; inf when rank-deficient
    unused: tuple[str, ...]  # parameters no cell exercises (all-zero column)
    confounded: tuple[tuple[str, ...], ...]  # groups only identifiable as a combination
    names: tuple[str, ...] = PARAMS  # the columns, in order

    @property
    def identified(self) -> tuple[str, ...]:
        bad = set(self.unused) | {p for group in self.confounded for p in group}
        return tuple(p for p in self.names if p not in bad)

    def warnings(self) -> list[str]:
        out = [f"{p}: not identified — no cell exercises it, so its fitted value carries no information"
               for p in self.unused]
        for group in self.confounded:
            out.append(f"{', '.join(group)}: not identified separately — the cells move them together "
                       "(collinear columns); only their combination is fitted")
        return out


def identifiability(matrix: np.ndarray, tol: float = 1e-9, names: Sequence[str] = PARAMS) -> Identifiability:
    """Rank and conditioning of a (weighted) design matrix, and which parameters it cannot identify."""
    names = tuple(names)
    if matrix.shape[1] != len(names):
        raise ValueError(f"{matrix.shape[1]} columns for {len(names)} names")
    scale = np.linalg.norm(matrix, axis=0)
    used = scale > 0
    unused = tuple(p for p, u in zip(names, used) if not u)
    if not np.any(used):
        return Identifiability(0, float("inf"), unused, (), names)
    scaled = matrix[:, used] / scale[used]
    # V must be square (every direction of parameter space, the null space included); U is never used, and
    # computing it square (rows × rows) made this SVD ~100× slower for a grid of 144 cells: only a design
    # with fewer rows than columns needs the full factorisation to get all of V.
    _, sv, vt = np.linalg.svd(scaled, full_matrices=scaled.shape[0] < scaled.shape[1])
    sv_full = np.zeros(vt.shape[0])
    sv_full[: sv.size] = sv
    small = sv_full <= tol * sv_full.max()
    rank = int(np.count_nonzero(~small))
    used_names = [p for p, u in zip(names, used) if u]
    # The projector onto the null space does not depend on which basis the SVD returned: parameter j is
    # identified iff its diagonal entry is 0, and two parameters are confounded together iff linked
    # through non-zero off-diagonal entries (connected components).
    null = vt[small]
    proj = null.T @ null
    link = np.abs(proj) > 1e-6
    confounded: list[tuple[str, ...]] = []
    seen: set[int] = set()
    for j in range(len(used_names)):
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
        confounded.append(tuple(used_names[i] for i in sorted(component)))
    condition = float("inf") if rank < len(used_names) else float(sv_full.max() / sv_full.min())
    return Identifiability(rank, condition, unused, tuple(confounded), names)
