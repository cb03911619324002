"""Reproduce the seeds' worked results:
``python -m pfslayout.costmodel.reproduce {all,implications,fig2,fig3,hio,digest}``
(``digest``: the worked rows of docs/seeds.md §2.9).

Prints one JSON document; docs/reproduction.md shows the output and the tests assert the same numbers.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from pfslayout.costmodel import SEED_ETHERNET, SEED_INFINIBAND, cost, placement, shuffle
from pfslayout.costmodel.costmap import CostMap, cost_map

MIB = 1 << 20


def implications(n: int = 16) -> dict[str, Any]:
    """003 §3's four implications read off the cost map (sequential access, seeds' parameters)."""
    eth = cost_map(n)
    slow_connect = SEED_ETHERNET.model_copy(update={"e": SEED_ETHERNET.e * 10})
    bottleneck = {"ethernet, 3n client nodes": eth,
                  f"ethernet, {n // 4} client nodes": cost_map(n, clients=n // 4),
                  "ethernet, 1 client node": cost_map(n, clients=1),
                  "ethernet, e x10": cost_map(n, params=slow_connect)}

    def cells(cm: CostMap, layout: str) -> int:
        return sum(w.startswith(layout) for row in cm.winner for w in row)

    def excess(cm: CostMap) -> float:
        # geometric mean over the map of 1-DH's cost relative to the cheapest layout
        dh = np.array(cm.totals["1-DH"])
        best = np.minimum(np.minimum(np.array(cm.totals["1-DV"]), dh), np.array(cm.totals["2-D"]))
        return round(float(np.exp(np.log(dh / best).mean())), 3)

    return {
        "1_p_much_less_than_n_large_s_1DH": {
            "p": 1, "s": [s for s in eth.s if s >= 8 * MIB],
            "winners": [eth.layout_at(1, s) for s in eth.s if s >= 8 * MIB]},
        "2_p_near_n_2D": {
            "p": [p for p in eth.p if n // 8 <= p < n], "s": [s for s in eth.s if 128 * 1024 <= s <= 4 * MIB],
            "winners": sorted({eth.layout_at(p, s) for p in eth.p if n // 8 <= p < n
                               for s in eth.s if 128 * 1024 <= s <= 4 * MIB}),
            "at_p_equal_n": sorted({eth.layout_at(n, s) for s in eth.s})},
        "3_p_much_greater_than_n_1DV": {
            "p": [p for p in eth.p if p >= 4 * n],
            "winners": sorted({eth.layout_at(p, s) for p in eth.p if p >= 4 * n for s in eth.s})},
        "4_network_or_client_bottleneck_hurts_1DH": {
            "1DH_cost_over_best_geomean": {k: excess(cm) for k, cm in bottleneck.items()},
            "cells_won_by_1DH": {k: cells(cm, "1-DH") for k, cm in bottleneck.items()}},
        "tiny_requests_1DV": sorted({eth.layout_at(p, s) for p in eth.p for s in eth.s if s <= 16 * 1024}),
    }


def fig2() -> dict[str, Any]:
    S, B, NB = np.ones(4), np.array([1 / 8, 1 / 2, 1.0, 1.0]), 0.5
    owner = np.arange(4)
    local = placement.local_placement(S, B, owner)
    greedy = placement.coarse_balance(S, B, NB, owner)
    return {"cost_rows": placement.cost_matrix(S, B, NB, owner).tolist(), "local_makespan": local.makespan,
            "greedy_assignment": greedy.assignment, "greedy_loads": greedy.loads, "greedy_makespan": greedy.makespan}


def fig3() -> dict[str, Any]:
    return dict(shuffle.fig3_example(t=1.0))


def hio(m: int = 6, n: int = 6) -> dict[str, Any]:
    return {"m": m, "n": n, "NIO_eq4": round(shuffle.nio(m, n), 4), "SIO_eq5": shuffle.sio(m, n),
            "HIO_best_eq6": shuffle.hio_best(m, n), "HIO_worst_eq7": shuffle.hio_worst(m, n),
            "SIO_gain_eq8": round(shuffle.sio_gain(m, n), 4), "HIO_gain_eq9": shuffle.hio_gain(m, n),
            "NIO_monte_carlo": round(shuffle.simulate_nio(m, n), 3)}


def digest() -> dict[str, Any]:
    """docs/seeds.md §2.9's four rows under both variants, ms."""
    rows = [("eth-rand", SEED_ETHERNET, True, 8, 16, 8, 1, 256 * 1024),
            ("eth-seq", SEED_ETHERNET, False, 64, 16, 8, 2, MIB),
            ("ib-seq", SEED_INFINIBAND, False, 4, 8, 4, 1, MIB),
            ("eth-rand-p1", SEED_ETHERNET, True, 1, 16, 8, 1, 4096)]
    out = {}
    for tag, prm, rnd, p, n, g, m, s in rows:
        for variant in ("printed", "corrected"):
            out[f"{tag}/{variant}"] = {L: round(float(cost(L, p, n, m, s, g if L == "2-D" else None, random=rnd,
                                                           params=prm, variant=variant).total) * 1e3, 4)
                                       for L in ("1-DV", "1-DH", "2-D")}
    return out


SECTIONS = {"implications": implications, "fig2": fig2, "fig3": fig3, "hio": hio, "digest": digest}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    which = args[0] if args else "all"
    if which != "all" and which not in SECTIONS:
        print(f"reproduce: error: section: unknown {which!r}; use all or one of {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    doc = {k: f() for k, f in SECTIONS.items()} if which == "all" else SECTIONS[which]()
    # one top-level key per line: valid JSON that still reads well in docs/reproduction.md
    print("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items()) + "\n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
