"""Seed 004 (Liu, Zhuang, Chen 2015): shuffle cost of two-phase collective reads, acceptable delay,
the HIO window ordering, and the NIO/SIO/HIO analytical model (docs/seeds.md §2.8, §3.7, §6-D).

Units: message sizes in bytes, throughputs in bytes/s, times in seconds (or in units of t for the
analytical model, which is what the paper prints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from pfslayout.errors import InputError


def shuffle_cost(intra: Sequence[float], inter: Sequence[float], B_a: float, B_e: float, gamma: float) -> float:
    """004 Eq. (1): the slowest single exchange plus latency, T = max(m_ai/B_a, m_ej/B_e) + γ.

    The max runs over all messages (docs/seeds.md §6 D2: the printed 0 < i excludes index 0 by mistake)."""
    if not (B_a > 0 and B_e > 0):
        raise InputError("B_a" if not B_a > 0 else "B_e", "throughput must be positive")
    worst = max([x / B_a for x in intra] + [x / B_e for x in inter], default=0.0)
    return worst + gamma


def is_intra_printed(a_id: int, p_id: int, n_c: int) -> bool:
    """004 Eq. (2) as printed (a_id % n_c == p_id % n_c). Right for round-robin placement only if n_c is
    the number of nodes (docs/seeds.md §6 D1); use ``is_intra`` with a real rank→node map instead."""
    return a_id % n_c == p_id % n_c


def is_intra(a_id: int, p_id: int, node_of_rank: Sequence[int]) -> bool:
    return node_of_rank[a_id] == node_of_rank[p_id]


def acceptable_delay(T: Sequence[float]) -> list[float]:
    """004 Eq. (3): AD_i = max_k T_k − T_i over one application's aggregators."""
    top = max(T)
    return [top - t for t in T]


def relative_acceptable_delay(T: Sequence[float]) -> list[int]:
    """RAD: rank of AD_i ascending (0 = the slowest aggregator); ties by index."""
    ad = acceptable_delay(T)
    order = sorted(range(len(ad)), key=lambda i: (ad[i], i))
    rad = [0] * len(ad)
    for r, i in enumerate(order):
        rad[i] = r
    return rad


@dataclass(frozen=True)
class Request:
    """One aggregator's request in a server queue: service time 'read', its shuffle after, its slack."""

    app: int
    read: float
    shuffle: float
    ad: float = 0.0
    name: str = ""


def serve_makespan(order: Sequence[Request]) -> float:
    """One server serving the requests back to back; each aggregator finishes its read then shuffles.
    The time the last shuffle ends (the 004 Fig. 3 quantity)."""
    clock = 0.0
    end = 0.0
    for r in order:
        clock += r.read
        end = max(end, clock + r.shuffle)
    return end


def hio_order(window: Sequence[Request], threshold: float = 0.2) -> list[Request]:
    """Order one window (docs/seeds.md §3.7, clean bubble variant of Algorithm 1, §6 D4):
    if Σshuffle/Σread > threshold sort by AD ascending (slowest aggregators first), else by app id; then
    one pass swapping a request behind its successor while its slack exceeds the successor's read."""
    reads = sum(r.read for r in window)
    ratio = sum(r.shuffle for r in window) / reads if reads > 0 else 0.0
    key = (lambda r: (r.ad, r.app)) if ratio > threshold else (lambda r: (r.app, r.ad))
    w = sorted(window, key=key)
    j = 0
    while j < len(w) - 1:
        a, b = w[j], w[j + 1]
        if a.ad > b.read:
            w[j], w[j + 1] = replace(b, ad=b.ad + a.read), replace(a, ad=a.ad - b.read)
        j += 1
    return w


def fig3_example(t: float = 1.0) -> dict[str, float | list[str]]:
    """004 Fig. 3: aggregators p0, p2, p4 on one node, 6t service each; p0 and p2 shuffle 6t, p4 none.
    Returns the FIFO (p4, p0, p2) makespan, the HIO order's makespan and p4's acceptable delay."""
    shuffles = {"p0": 6 * t, "p2": 6 * t, "p4": 0.0}
    ad = dict(zip(shuffles, acceptable_delay(list(shuffles.values()))))  # Eq. (3) on shuffle costs
    reqs = {k: Request(app=0, read=6 * t, shuffle=shuffles[k], ad=ad[k], name=k) for k in shuffles}
    fifo = [reqs["p4"], reqs["p0"], reqs["p2"]]
    hio = hio_order(fifo, threshold=0.2)
    hio_end = serve_makespan(hio)
    # how long p4 could wait, if served first, and still finish before the application does
    p4_alone = reqs["p4"].read + reqs["p4"].shuffle
    return {"fifo": serve_makespan(fifo), "hio": hio_end, "hio_order": [r.name for r in hio],
            "p4_max_delay": hio_end - p4_alone}


def _check_mn(m: int, n: int) -> None:
    if m < 1:
        raise InputError("m", f"number of applications must be at least 1 (got {m})")
    if n < 1:
        raise InputError("n", f"number of storage nodes must be at least 1 (got {n})")


def expected_max_completion(m: int, n: int) -> float:
    """E[max over n nodes] of a completion uniform on {t..mt}, in units of t: m − Σ_{x=1}^{m−1} (x/m)^n
    (004 Eq. (4) first term), computed exactly."""
    _check_mn(m, n)
    return float(m - Fraction(sum(x**n for x in range(1, m)), m**n))


def nio(m: int, n: int, t: float = 1.0, max_shuffle: float = 0.0) -> float:
    """004 Eq. (4): no coordination."""
    return expected_max_completion(m, n) * t + max_shuffle


def sio(m: int, n: int, t: float = 1.0, max_shuffle: float = 0.0) -> float:
    """004 Eq. (5): all servers serve applications in the same order."""
    _check_mn(m, n)
    return (m + 1) / 2 * t + max_shuffle


def hio_best(m: int, n: int, t: float = 1.0, max_shuffle: float = 0.0) -> float:
    """004 Eq. (6)."""
    _check_mn(m, n)
    return t + max_shuffle


def hio_worst(m: int, n: int, t: float = 1.0, max_shuffle: float = 0.0) -> float:
    """004 Eq. (7) (equal to SIO: HIO is never worse than SIO in this model)."""
    return sio(m, n, t, max_shuffle)


def sio_gain(m: int, n: int, t: float = 1.0) -> float:
    """004 Eq. (8): NIO − SIO = ((m−1)/2)t − (t/m^n)Σ x^n, tending to ((m−1)/2)t as n → ∞."""
    return nio(m, n, t) - sio(m, n, t)


def hio_gain(m: int, n: int, t: float = 1.0) -> float:
    """004 Eq. (9): SIO − HIO best case = ((m−1)/2)t."""
    return sio(m, n, t) - hio_best(m, n, t)


def nio_by_definition(m: int, n: int) -> float:
    """Eq. (4)'s middle form Σ x (G(x) − G(x−1)) with G(x) = (x/m)^n, to check the closed form."""
    _check_mn(m, n)
    G = [Fraction(x, m) ** n for x in range(m + 1)]
    return float(sum(x * (G[x] - G[x - 1]) for x in range(1, m + 1)))


def simulate_nio(m: int, n: int, trials: int = 20000, seed: int = 0) -> float:
    """Monte Carlo of the NIO assumption (independent uniform service positions per node), in t."""
    rng = np.random.default_rng(seed)
    return float(rng.integers(1, m + 1, size=(trials, n)).max(axis=1).mean())
