"""Which layout wins over (process count × request size): the data behind 003 Fig. 4 / `pfslayout cost-map`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pfslayout.costmodel.params import SEED_ETHERNET, CostParams
from pfslayout.costmodel.table import LAYOUTS, cost
from pfslayout.errors import InputError

KIB = 1 << 10


@dataclass(frozen=True)
class CostMap:
    n: int
    clients: int
    p: list[int]
    s: list[int]
    m: list[int]  # per p: processes per client node, ⌈p / clients⌉
    winner: list[list[str]]  # [i_p][j_s] layout label, e.g. "2-D(g=8)"
    totals: dict[str, list[list[float]]]  # per layout (2-D: best g), seconds per request
    best_g: list[list[int | None]]
    variant: str
    random: bool

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "clients": self.clients, "p": self.p, "s": self.s, "m": self.m,
                "winner": self.winner, "best_g": self.best_g, "totals": self.totals, "variant": self.variant,
                "random": self.random}

    def layout_at(self, p: int, s: int) -> str:
        return self.winner[self.p.index(p)][self.s.index(s)].split("(")[0]


def default_axes(n: int) -> tuple[list[int], list[int]]:
    p_max = max(64, 16 * n)
    ps = [1 << k for k in range(0, int(np.log2(p_max)) + 1)]
    ss = [4 * KIB << k for k in range(0, 15)]  # 4 KiB … 64 MiB
    return ps, ss


def cost_map(n: int, clients: int | None = None, params: CostParams = SEED_ETHERNET, variant: str = "corrected",
             random: bool = False, g: int | None = None, p_values: list[int] | None = None,
             s_values: list[int] | None = None) -> CostMap:
    """Cost every (p, s) cell under 1-DH, 1-DV and 2-D (best divisor g of n, or the given g).

    m = ⌈p / clients⌉ (processes spread evenly over the client nodes); clients defaults to 3n, the seeds'
    Ethernet testbed ratio (48 client nodes for 16 servers)."""
    if n < 1:
        raise InputError("--n", f"must be at least 1 (got {n})", "pass the number of data servers")
    clients = 3 * n if clients is None else clients
    if clients < 1:
        raise InputError("--clients", f"must be at least 1 (got {clients})")
    ps, ss = default_axes(n)
    ps = p_values or ps
    ss = s_values or ss
    if g is not None:
        if not 1 <= g <= n:
            raise InputError("--g", f"must be between 1 and n={n} (got {g})", f"pass a divisor of n={n}")
        gs = [g]
    else:
        gs = [d for d in range(2, n) if n % d == 0] or [1 if n == 1 else n]
    P, S = np.meshgrid(np.array(ps), np.array(ss, dtype=np.float64), indexing="ij")
    M = -(-P // clients)
    totals: dict[str, np.ndarray] = {}
    for layout in LAYOUTS:
        if layout != "2-D":
            totals[layout] = cost(layout, P.ravel(), n, M.ravel(), S.ravel(), random=random, params=params,
                                  variant=variant).total.reshape(P.shape)
    per_g = np.stack([cost("2-D", P.ravel(), n, M.ravel(), S.ravel(), np.full(P.size, gg), random=random,
                           params=params, variant=variant).total.reshape(P.shape) for gg in gs])
    gi = np.argmin(per_g, axis=0)
    totals["2-D"] = np.take_along_axis(per_g, gi[None], axis=0)[0]
    best_g = np.array(gs)[gi]
    stack = np.stack([totals[L] for L in LAYOUTS])
    win = np.argmin(stack, axis=0)  # ties → first of 1-DV, 1-DH, 2-D
    winner = [[LAYOUTS[w] if LAYOUTS[w] != "2-D" else f"2-D(g={best_g[i, j]})" for j, w in enumerate(row)]
              for i, row in enumerate(win)]
    return CostMap(n=n, clients=clients, p=list(ps), s=list(ss), m=M[:, 0].tolist(), winner=winner,
                   totals={k: v.tolist() for k, v in totals.items()},
                   best_g=[[int(best_g[i, j]) if win[i, j] == 2 else None for j in range(len(ss))]
                           for i in range(len(ps))],
                   variant=variant, random=random)
