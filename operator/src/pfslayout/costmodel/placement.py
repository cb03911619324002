"""Seed 002 (Wang & Kaeli, CLUSTER'05): chunk placement cost and heterogeneous load balancing.

docs/seeds.md §2.7, §2.10, §3.6 and the §6-C resolutions: C1 j = 0..N−1 and the objective is a makespan;
C2 the cost matrix is T[c][d] = S_c/B_d + [d not local to c] S_c/NB; C3 the greedy pass adds the full
assigned cost (network included) to the column — only this reproduces Fig. 2's makespan 4; C4 index order
by default, LPT as an option; C5 the fine-grained premise is S_j/B_j > S_i/B_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pfslayout.errors import InputError


def _positive(name: str, values: np.ndarray) -> None:
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise InputError(name, "must be a non-empty list of positive numbers")


def ilp_costs(S: npt.ArrayLike, B: npt.ArrayLike, BN: float, A: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """C1[i, j] (chunk i placed on j: disk time plus serving every other processor over the network)
    and C2[i, j] (processor j reaching chunk i remotely), 002 §4.2."""
    S = np.asarray(S, dtype=float)
    B = np.asarray(B, dtype=float)
    A = np.asarray(A, dtype=float)
    if A.shape != (S.size, B.size):
        raise InputError("A", f"must be chunks × partitions = {S.size}×{B.size} (got {A.shape})")
    remote = (S / BN)[:, None]
    others = A.sum(axis=1, keepdims=True) - A
    C1 = S[:, None] / B[None, :] + remote * others
    C2 = remote * A
    return C1, C2


def ilp_makespan(X: npt.ArrayLike, C1: np.ndarray, C2: np.ndarray) -> float:
    """The ILP objective Max_j Σ_i X_ij C1_ij + (1 − X_ij) C2_ij for an assignment matrix X."""
    X = np.asarray(X, dtype=float)
    return float(np.max((X * C1 + (1 - X) * C2).sum(axis=0)))


def cost_matrix(S: npt.ArrayLike, B: npt.ArrayLike, NB: float, owner: npt.ArrayLike) -> np.ndarray:
    """T[c][d] = S_c/B_d + (d is not owner[c]'s local disk) S_c/NB (docs/seeds.md §6 C2). owner −1 = no local disk."""
    S = np.asarray(S, dtype=float)
    B = np.asarray(B, dtype=float)
    _positive("S", S)
    _positive("B", B)
    if not NB > 0:
        raise InputError("NB", "network bandwidth must be positive")
    owner = np.asarray(owner, dtype=np.int64)
    local = owner[:, None] == np.arange(B.size)[None, :]
    return np.asarray(S[:, None] / B[None, :] + np.where(local, 0.0, S[:, None] / NB))


@dataclass(frozen=True)
class Placement:
    assignment: list[int]  # disk of each chunk
    loads: list[float]  # accumulated cost per disk (time)
    makespan: float


def coarse_balance(S: npt.ArrayLike, B: npt.ArrayLike, NB: float, owner: npt.ArrayLike,
                   order: str = "index") -> Placement:
    """Greedy min-cost assignment (002 §4.3.1, docs/seeds.md §3.6(b)); ties go to the lowest disk index."""
    own = cost_matrix(S, B, NB, owner)  # each chunk's own cost on each disk
    T = own.copy()  # own cost plus the work already queued on that disk
    chunks = np.arange(T.shape[0])
    if order == "lpt":
        chunks = np.argsort(-np.asarray(S, dtype=float), kind="stable")
    elif order != "index":
        raise InputError("order", f"unknown chunk order {order!r}", "use index or lpt")
    assignment = [-1] * T.shape[0]
    loads = np.zeros(T.shape[1])
    unassigned = np.ones(T.shape[0], dtype=bool)
    for c in chunks:
        d = int(np.argmin(T[c]))  # argmin keeps the first minimum: lowest index on ties
        assignment[c] = d
        unassigned[c] = False
        loads[d] += own[c, d]
        # docs/seeds.md §6 C3: later chunks on d wait for this one's full cost, network part included (its
        # own cost, not the accumulated column, which would count earlier chunks twice)
        T[unassigned, d] += own[c, d]
    return Placement(assignment=assignment, loads=loads.tolist(), makespan=float(loads.max()))


def local_placement(S: npt.ArrayLike, B: npt.ArrayLike, owner: npt.ArrayLike) -> Placement:
    """Every chunk on its owner's local disk (the unbalanced P2P baseline)."""
    S = np.asarray(S, dtype=float)
    B = np.asarray(B, dtype=float)
    owner = np.asarray(owner, dtype=np.int64)
    loads = np.zeros(B.size)
    np.add.at(loads, owner, S / B[owner])
    return Placement(assignment=owner.tolist(), loads=loads.tolist(), makespan=float(loads.max()))


def fine_split(S_i: float, B_i: float, S_j: float, B_j: float, NB: float) -> float:
    """Bytes to move from the loaded disk j to disk i, 002 Eq. (2): the exact root of Eq. (1)."""
    inv_nb = 0.0 if np.isinf(NB) else 1.0 / NB
    return (B_i * S_j - B_j * S_i) / (B_i + B_j + B_i * B_j * inv_nb)


def fine_balance(S: npt.ArrayLike, B: npt.ArrayLike, NB: float, eps: float = 1e-9,
                 max_iter: int = 10_000) -> np.ndarray:
    """Repeatedly move Eq. (2)'s amount from the slowest to the fastest-finishing disk (docs/seeds.md §3.6(c)).

    The pairing and stopping rule are ours. Loads are bytes; returns the balanced loads.
    """
    S = np.array(S, dtype=float)
    B = np.asarray(B, dtype=float)
    _positive("B", B)
    for _ in range(max_iter):
        t = S / B
        j, i = int(np.argmax(t)), int(np.argmin(t))
        if t[j] <= t[i] + eps * max(t[j], 1e-300):
            break
        move = fine_split(S[i], B[i], S[j], B[j], NB)
        if move <= 0:
            break
        S[j] -= move
        S[i] += move
    return S


def strip_sizes(bandwidth: npt.ArrayLike, row_bytes: int, align: int = 4096) -> list[int]:
    """Turn per-server speed into varstrip_dist strip sizes: one stripe row of ``row_bytes`` balanced by
    fine_balance (every byte is remote in a striped file, so NB is folded into ``bandwidth``), then
    rounded to ``align`` bytes with the remainder given to the fastest servers. Every strip ≥ align."""
    B = np.asarray(bandwidth, dtype=float)
    _positive("bandwidth", B)
    n = B.size
    if row_bytes < n * align:
        raise InputError("row_bytes", f"must be at least {n}×{align} bytes to give every server a strip")
    loads = fine_balance(np.full(n, row_bytes / n), B, np.inf)
    # largest-remainder rounding to whole alignment units, at least one unit per server
    exact = loads / align
    units_total = row_bytes // align
    units = np.maximum(1, np.floor(exact + 1e-9)).astype(np.int64)
    remainder = exact - units
    for idx in np.argsort(-remainder, kind="stable"):
        if units.sum() >= units_total:
            break
        units[idx] += 1
    for idx in np.argsort(remainder, kind="stable"):
        if units.sum() <= units_total:
            break
        if units[idx] > 1:
            units[idx] -= 1
    return [int(u) * align for u in units]
