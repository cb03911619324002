#!/usr/bin/env python3
"""Throughput of costing a whole trace under the three layouts (not a test; prints figures and ratios).

A synthetic trace of N requests (default 10 M) is costed under 1-DV, 1-DH and 2-D (g = n/2) three ways,
all in this run:

* ``plan totals``  — what ``pfslayout plan`` does: group requests by (p, m, random) with two ``bincount``
  passes, then the exact trace totals of each layout from the groups (the model is linear in s per group);
* ``per-request``  — the per-request total of each layout (what hybrid routing needs): the grouping plus one
  gather and one fused multiply-add per layout, in cache-sized chunks;
* ``cost()``       — the public API returning all four term arrays per request (for reference);
* ``plain Python`` — a scalar loop over a sample of the same records, straight from the table.

Goal: ≥ 20 M records/s on one core. The vectorised results are checked against the plain loop on the sample
and against the shared test vectors before any figure is printed.

    python operator/bench/plan_throughput.py [--requests 10000000] [--sample 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

# one core: keep any BLAS call (np.dot on the group tables) single-threaded
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from pfslayout.costmodel import SEED_ETHERNET, CostParams, cost  # noqa: E402
from pfslayout.costmodel.fast import group_requests, layout_totals, per_request_totals  # noqa: E402

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "tests" / "vectors" / "cost-vectors.json"
LAYOUTS = (("1-DV", None), ("1-DH", None), ("2-D", "half"))


def synthetic_trace(n_req: int, seed: int = 1) -> tuple[np.ndarray, ...]:
    """Phases of 1-256 concurrent processes on 48 client nodes, sizes 4 KiB-4 MiB, 30% random."""
    rng = np.random.default_rng(seed)
    p = (1 << rng.integers(0, 9, n_req)).astype(np.int32)
    m = ((p + 47) // 48).astype(np.int32)
    s = (4096 << rng.integers(0, 11, n_req)).astype(np.float64)
    rnd = rng.random(n_req) < 0.3
    return p, m, s, rnd


def scalar_total(layout: str, p: int, n: int, m: int, s: float, g: int | None, rnd: bool, prm: dict) -> float:
    """The corrected table for one request, plain Python (the loop the vectorised paths are compared to)."""
    alpha = prm["alpha_rand"] if rnd else prm["alpha_seq"]
    if layout == "1-DV":
        q = -(-p // n)
        k = max(m, q)
        return k * prm["e"] + k * s * prm["v"] + q * alpha + q * s * prm["beta"]
    if layout == "1-DH":
        return max(p, m * n) * prm["e"] + max(p * s / n, m * s) * prm["v"] + p * alpha + p * s * prm["beta"] / n
    assert g is not None, "2-D needs its group size"
    G = -(-p // g)
    kc, kp = -(-n // g), n // g
    return max(G, m * kc) * prm["e"] + max(G * s / kp, m * s) * prm["v"] + G * alpha + G * s * prm["beta"] / kp


def check_vectors() -> int:
    """The per-request path must reproduce every corrected case of the shared vectors."""
    doc = json.loads(VECTORS.read_text())
    checked = 0
    for case in doc["cases"]:
        if case["variant"] != "corrected":
            continue
        prm = CostParams(**case["params"])
        p, m, s = (np.array([case[k]]) for k in ("p", "m", "s"))
        groups = group_requests(p, m, s, np.array([case["random"]]), with_key=True)
        got = per_request_totals(case["layout"], groups, s, case["n"], case["g"], prm)[0]
        want = case["expected"]["total"]
        assert abs(got - want) <= 1e-12 * abs(want) + 1e-18, (case["id"], got, want)
        checked += 1
    return checked


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--sample", type=int, default=200_000, help="records for the plain Python loop")
    ap.add_argument("--servers", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.servers
    prm = SEED_ETHERNET
    scal = prm.scalars()
    layouts = [(L, n // 2 if g == "half" else None) for L, g in LAYOUTS]

    print(f"pid {os.getpid()}; numpy {np.__version__}; {args.requests:,} requests; n={n}; layouts "
          + ", ".join(f"{L}" + (f"(g={g})" if g else "") for L, g in layouts))
    print(f"vectors: {check_vectors()} corrected cases of {VECTORS.name} reproduced by the per-request path")
    p, m, s, rnd = synthetic_trace(args.requests)
    N = args.requests

    def plan_totals() -> list[float]:
        groups = group_requests(p, m, s, rnd)
        return [layout_totals(L, groups, n, g, prm).total for L, g in layouts]

    outs = [np.empty(N) for _ in layouts]

    def per_request() -> None:
        groups = group_requests(p, m, s, rnd, with_key=True)
        for (L, g), out in zip(layouts, outs):
            per_request_totals(L, groups, s, n, g, prm, out=out)

    def breakdown() -> None:
        # cost(): the public per-request API with all four term arrays (validates its input every call)
        for L, g in layouts:
            cost(L, p, n, m, s, g, random=rnd, params=prm)

    t_tot = best_of(plan_totals, args.repeat)
    t_brk = best_of(breakdown, 1)
    totals = plan_totals()
    t_per = best_of(per_request, args.repeat)

    k = min(args.sample, N)
    idx = np.random.default_rng(2).choice(N, k, replace=False)
    ps, ms, ss, rs = p[idx].tolist(), m[idx].tolist(), s[idx].tolist(), rnd[idx].tolist()
    t0 = time.perf_counter()
    loop = [[scalar_total(L, ps[i], n, ms[i], ss[i], g, rs[i], scal) for i in range(k)] for L, g in layouts]
    t_loop = time.perf_counter() - t0

    for (L, _g), out, ref in zip(layouts, outs, loop):
        np.testing.assert_allclose(out[idx], np.array(ref), rtol=1e-12, err_msg=L)
    for (L, _g), out, tot in zip(layouts, outs, totals):
        assert abs(out.sum() - tot) <= 1e-9 * tot, (L, out.sum(), tot)

    r_tot, r_per, r_loop, r_brk = N / t_tot, N / t_per, k / t_loop, N / t_brk
    print(f"plan totals : {t_tot:8.3f} s  {r_tot / 1e6:8.1f} M records/s (3 layouts)")
    print(f"per-request : {t_per:8.3f} s  {r_per / 1e6:8.1f} M records/s (3 layouts, per-request arrays)")
    print(f"cost()      : {t_brk:8.3f} s  {r_brk / 1e6:8.1f} M records/s (3 layouts, T_e/T_x/T_s/T_rw/total arrays)")
    print(f"plain Python: {t_loop:8.3f} s  {r_loop / 1e6:8.3f} M records/s ({k:,}-record sample, 3 layouts)")
    print(f"ratio plan totals / plain Python = {r_tot / r_loop:,.0f}x; "
          f"per-request / plain Python = {r_per / r_loop:,.0f}x")
    print(f"goal >= 20 M records/s: plan totals {'met' if r_tot >= 20e6 else 'NOT met'}, "
          f"per-request {'met' if r_per >= 20e6 else 'NOT met'}")


if __name__ == "__main__":
    main()
