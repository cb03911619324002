#!/usr/bin/env python3
"""Generate cost-vectors.json: the shared test vectors of the 003 Table 2 cost model.

Written straight from the table (docs/seeds.md §2.2, 003 Table 2) as plain scalar Python with exact rational
arithmetic (fractions.Fraction), deliberately independent of ``pfslayout.costmodel`` (numpy) so that the
tests comparing the two are not circular. It imports nothing from the package.

Run:  python3 operator/tests/vectors/generate_cost_vectors.py > operator/tests/vectors/cost-vectors.json
The output is deterministic; re-running must give a byte-identical file (a test checks that).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction as F

MIB = 1 << 20
KIB = 1 << 10

# 003 Table 3; MB read as MiB (docs/seeds.md §6 A7). Values as the floats the implementations use.
ETH = {"e": 0.0003, "v": 1.0 / (120 * MIB), "alpha_seq": 0.0001, "alpha_rand": 0.0003, "beta": 1.0 / (120 * MIB)}
IB = {"e": 0.0002, "v": 1.0 / (1000 * MIB), "alpha_seq": 0.0001, "alpha_rand": 0.0003, "beta": 1.0 / (120 * MIB)}
# A made-up platform where every term has a different weight, so swapped terms cannot cancel.
ODD = {"e": 0.00017, "v": 3.1e-9, "alpha_seq": 0.00023, "alpha_rand": 0.0071, "beta": 7.7e-9}
# Per-operation platforms (docs/cost-model.md "Reads and writes"): e_write/beta_write are a write's e and beta;
# an unset one means a write uses e or beta. Both set, each alone, and a zero e_write (set, not unset).
ETH_RW = ETH | {"e_write": 0.0006, "beta_write": 2.0 / (120 * MIB)}
ODD_RW = ODD | {"e_write": 0.00041, "beta_write": 1.3e-9}
IB_BW = IB | {"beta_write": 1.0 / (80 * MIB)}
ODD_EW = ODD | {"e_write": 0.0}
# Shared cores (docs/cost-model.md "Shared cores"): every message of a round — p processes, each request touching
# nt servers — also costs e_shared. With and without the write terms.
ETH_SH = ETH_RW | {"e_shared": 0.00002}
ODD_SH = ODD_RW | {"e_shared": 0.000013}
OP_PARAMS = ("ETH_RW", "ODD_RW", "IB_BW", "ODD_EW", "ETH_SH", "ODD_SH")
# Overlap (docs/cost-model.md "Overlapped network and storage"): a request takes the larger of its network
# side (T_e + T_x) and its storage side (T_s + T_rw). Corrected variant only (the fit never pairs it with
# printed), with and without the write and shared terms.
ETH_OV = ETH_SH | {"overlap": True}
ODD_OV = ODD_RW | {"overlap": True}
IB_OV = IB_BW | {"overlap": True}
OV_PARAMS = ("ETH_OV", "ODD_OV", "IB_OV")
# Small writes (docs/cost-model.md "Small writes"): a write split over nt >= 2 servers into pieces below OrangeFS's
# small-I/O limit (s/nt < 16 KiB) also costs p·s·v_small_write in T_x; a read never. Summed with the write terms,
# and overlapped with the shared-core term.
SMALL_IO = 16384
ETH_SW = ETH_RW | {"v_small_write": 1e-8}
ODD_SW = ODD_SH | {"v_small_write": 3.7e-9, "overlap": True}
SW_PARAMS = ("ETH_SW", "ODD_SW")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def printed(layout: str, p: int, n: int, m: int, size: int, g: int | None) -> tuple[str, list[F]]:
    """003 Table 2 exactly as printed. Returns (row label, [ce, cv, ca, cb]) as exact rationals."""
    s = F(size)
    if layout == "1-DV":
        q = ceil_div(p, n)
        if p <= n:
            row, te, tx = "p<=n", m, m * s
        elif m <= q:
            row, te, tx = "p>n,m<=ceil(p/n)", q, q * s
        else:
            row, te, tx = "p>n,m>ceil(p/n)", m, m * s
        return row, [F(te), tx, F(q), q * s]
    if layout == "1-DH":
        q = ceil_div(p, n)
        if m <= q:
            row, te, tx = "m<=ceil(p/n)", p, p * s / n
        else:
            row, te, tx = "m>ceil(p/n)", m * n, m * s
        return row, [F(te), tx, F(p), p * s / n]
    assert g is not None
    G = ceil_div(p, g)
    k = ceil_div(n, g)
    if p <= g:
        row, te, tx = "p<=g", m * k, m * s
    elif m <= F(G, k):
        row, te, tx = "p>g,m<=ceil(p/g)/ceil(n/g)", G, G * s / k
    else:
        row, te, tx = "p>g,m>ceil(p/g)/ceil(n/g)", m * G, m * s  # m⌈p/g⌉e as printed (docs/seeds.md §6 A2)
    return row, [F(te), tx, F(G), G * s / k]


def side(server: F, client: F) -> str:
    return "server" if server > client else "client" if client > server else "tie"


def corrected(layout: str, p: int, n: int, m: int, size: int, g: int | None) -> tuple[dict[str, str], list[F]]:
    """The max form (larger of server-side and client-side serial counts) with docs/seeds.md §6 A1-A3 fixes."""
    s = F(size)
    if layout == "1-DV":
        q = ceil_div(p, n)
        se, ce_ = F(q), F(m)
        sx, cx = q * s, m * s
        ca, cb = F(q), q * s
    elif layout == "1-DH":
        se, ce_ = F(p), F(m * n)  # seeds.md §6 A3: a client node opens n connections per request
        sx, cx = p * s / n, m * s
        ca, cb = F(p), p * s / n
    else:
        assert g is not None
        G = ceil_div(p, g)
        k_conn = ceil_div(n, g)  # servers one request touches
        k_par = n // g  # seeds.md §6 A1: the smallest group bounds the parallel transfer
        se, ce_ = F(G), F(m * k_conn)  # seeds.md §6 A2: client side is m⌈n/g⌉ connections
        sx, cx = G * s / k_par, m * s
        ca, cb = F(G), G * s / k_par
    sides = {"T_e": side(se, ce_), "T_x": side(sx, cx)}
    return sides, [max(se, ce_), max(sx, cx), ca, cb]


def touched(layout: str, n: int, g: int | None) -> int:
    """Servers one request touches: 1 (1-DV), n (1-DH), ⌈n/g⌉ (2-D, its group)."""
    return 1 if layout == "1-DV" else n if layout == "1-DH" else ceil_div(n, g or 1)


def small_bytes(layout: str, p: int, n: int, g: int | None, s: int) -> int:
    """p·s when a request of s bytes is split over nt >= 2 servers into pieces below SMALL_IO, else 0."""
    nt = touched(layout, n, g)
    return p * s if nt >= 2 and s < SMALL_IO * nt else 0


def expected(coef: list[F], params: dict[str, float], random: bool, messages: int = 0,
             small: int = 0) -> dict[str, float]:
    """The four terms; ``messages`` = p·nt, the round's messages that e_shared (when given) charges in T_e;
    ``small`` = the bytes v_small_write (when given: a write's) charges in T_x."""
    alpha = params["alpha_rand"] if random else params["alpha_seq"]
    te = coef[0] * F(params["e"]) + messages * F(params.get("e_shared", 0.0))
    tx = coef[1] * F(params["v"]) + small * F(params.get("v_small_write", 0.0))
    terms = [te, tx, coef[2] * F(alpha), coef[3] * F(params["beta"])]
    out = {name: float(t) for name, t in zip(("T_e", "T_x", "T_s", "T_rw"), terms)}
    out["total"] = float(max(terms[0] + terms[1], terms[2] + terms[3]) if params.get("overlap") else sum(terms))
    return out


def for_op(params: dict[str, float], op: str) -> dict[str, float]:
    """The five parameters (and e_shared) ``op`` is costed with: a read keeps e and beta, a write takes
    e_write and beta_write where set and v_small_write (the rule of CostParams.for_op and pfs_params_for_op,
    written out again)."""
    five = {k: params[k] for k in ("e", "v", "alpha_seq", "alpha_rand", "beta")}
    for k in ("e_shared", "overlap"):  # not an operation's term: both keep it
        if k in params:
            five[k] = params[k]
    if op == "write":
        five["e"] = params.get("e_write", params["e"])
        five["beta"] = params.get("beta_write", params["beta"])
        if "v_small_write" in params:
            five["v_small_write"] = params["v_small_write"]
    return five


def grid() -> list[tuple[str, int, int, int, int | None, int, bool, str]]:
    """(layout, p, n, m, g, s, random, params name) — hand-picked to hit every row and edge."""
    out: list[tuple[str, int, int, int, int | None, int, bool, str]] = []
    sizes = [0, 1, 4 * KIB, 256 * KIB, MIB, 4 * MIB, 1 << 40]
    # (p, n, m): p=1, p<n, p=n, p=n+1, p>>n; m small, m=ceil(p/n), m above it, m=p.
    pnm = [
        (1, 1, 1), (1, 16, 1), (2, 16, 1), (2, 16, 2), (8, 16, 1), (8, 16, 8), (16, 16, 1), (16, 16, 4),
        (17, 16, 1), (17, 16, 2), (17, 16, 3), (64, 16, 2), (64, 16, 4), (64, 16, 5), (64, 16, 64),
        (4, 8, 1), (8, 8, 8), (9, 8, 2), (100, 8, 13), (100, 8, 14), (4096, 8, 1), (4096, 8, 512),
        (4096, 8, 600), (7, 6, 2), (24, 6, 4), (24, 6, 5), (3, 1, 3), (5, 1, 1),
    ]
    for i, (p, n, m) in enumerate(pnm):
        for layout in ("1-DV", "1-DH"):
            for j, s in enumerate(sizes):
                if (i + j) % 3:  # a third of the size grid per (p, n, m) keeps the file readable
                    continue
                out.append((layout, p, n, m, None, s, (i * 7 + j) % 2 == 0, ("ETH", "IB", "ODD")[(i + 2 * j) % 3]))
    # 2-D: (p, n, m, g) covering p<=g, both p>g rows, g | n and g ∤ n (⌈n/g⌉ ≠ ⌊n/g⌋), g = 1, g = n.
    pnmg = [
        (1, 16, 1, 8), (8, 16, 1, 8), (8, 16, 4, 8), (9, 16, 1, 8), (9, 16, 2, 8), (64, 16, 2, 8), (64, 16, 4, 8),
        (64, 16, 5, 8), (64, 16, 3, 8), (4, 8, 1, 4), (5, 8, 1, 4), (12, 8, 1, 4), (12, 8, 2, 4),
        (1, 1, 1, 1), (6, 1, 2, 1), (16, 16, 1, 16), (17, 16, 1, 16), (17, 16, 2, 16), (32, 16, 1, 1),
        (32, 16, 2, 1), (7, 10, 1, 3), (12, 10, 1, 3), (40, 10, 3, 3), (40, 10, 4, 3), (40, 10, 5, 3),
        (90, 10, 7, 4), (90, 10, 8, 4), (90, 10, 12, 4), (1000, 10, 40, 6), (1000, 10, 90, 6),
        (1000, 10, 200, 6), (5, 7, 1, 5), (11, 7, 3, 5), (300, 16, 1, 5), (300, 16, 20, 5),
    ]
    for i, (p, n, m, g) in enumerate(pnmg):
        for j, s in enumerate(sizes):
            if (i + j) % 2:
                continue
            out.append(("2-D", p, n, m, g, s, (i + j) % 4 == 0, ("ETH", "IB", "ODD")[(i + j) % 3]))
    return out


# docs/seeds.md §2.9: four rows costed under the three layouts by the printed table, in ms to 4 decimals.
WORKED_ROWS = [
    # (tag, params, random, p, n, g, m, s, {layout: ms})
    ("eth-rand-p8", "ETH", True, 8, 16, 8, 1, 256 * KIB, {"1-DV": 4.7667, "1-DH": 6.8833, "2-D": 4.0250}),
    ("eth-seq-p64", "ETH", False, 64, 16, 8, 2, MIB, {"1-DV": 68.2667, "1-DH": 92.2667, "2-D": 69.8667}),
    ("ib-seq-p4", "IB", False, 4, 8, 4, 1, MIB, {"1-DV": 9.6333, "1-DH": 5.8667, "2-D": 5.6667}),
    ("eth-rand-p1", "ETH", True, 1, 16, 8, 1, 4 * KIB, {"1-DV": 0.6651, "1-DH": 0.6041, "2-D": 0.9488}),
]

# Further cases checked by hand against 003 Table 2 cells, with the arithmetic written out.
EXTRA_HAND = [
    ("hand-2d-printed-client-bound", "printed", "2-D", 64, 16, 5, 8, MIB, False, "ETH",
     "003 Table 2, 2-D row p>g, m>⌈p/g⌉/⌈n/g⌉: ⌈64/8⌉=8, ⌈16/8⌉=2, 5>4 so T_e = m⌈p/g⌉e = 5·8·0.3 ms = 12 ms "
     "(the printed typo, docs/seeds.md §6 A2), T_x = msv = 5/120 s = 41.6667 ms, T_s = 8·0.1 ms, T_rw = 8/(2·120) s "
     "= 33.3333 ms; total 87.8 ms.", 87.8),
    ("hand-2d-corrected-client-bound", "corrected", "2-D", 64, 16, 5, 8, MIB, False, "ETH",
     "Same inputs under the max form: T_e = max(⌈p/g⌉, m⌈n/g⌉)e = max(8, 10)·0.3 ms = 3 ms "
     "(docs/seeds.md §6 A2 fixed), "
     "T_x = max(8/2, 5)·s·v = 41.6667 ms, storage as printed; total 78.8 ms.", 78.8),
    ("hand-1dh-corrected-p1", "corrected", "1-DH", 1, 16, 1, None, 4 * KIB, True, "ETH",
     "Max form for docs/seeds.md §2.9 row 4 (§6 A3): T_e = max(p, mn)e = 16·0.3 ms = 4.8 ms, T_x = max(s/16, s)v "
     "= 4096/(120·2^20) s = 0.032552 ms, T_s = 0.3 ms, T_rw = s·β/16 = 0.0020345 ms; total 5.1346 ms.", 5.1346),
    ("hand-2d-corrected-g-not-dividing-n", "corrected", "2-D", 40, 10, 3, 3, MIB, False, "ETH",
     "g=3 ∤ n=10 (docs/seeds.md §6 A1): ⌈p/g⌉=14, ⌈n/g⌉=4 connections, ⌊n/g⌋=3 parallel; T_e = max(14, 3·4)e = 4.2 ms, "
     "T_x = max(14/3, 3)·s·v = 14/360 s = 38.8889 ms, T_s = 14·0.1 ms = 1.4 ms, T_rw = 38.8889 ms; "
     "total 83.3778 ms.", 83.3778),
]

# Per-operation cases checked by hand: docs/seeds.md §2.9 row 1 (1-DV, printed) read and written under ETH_RW.
OP_HAND = [
    ("op-hand-1dv-printed-read", "read", 4.7667,
     "docs/seeds.md §2.9 row eth-rand-p8, 1-DV, read: e and beta as ETH, so the printed 4.7667 ms"),
    ("op-hand-1dv-printed-write", "write", 7.15,
     "The same request written: p<=n so T_e = m·e_write = 0.6 ms, T_x = msv = 2^18/(120·2^20) s = 2.0833 ms, "
     "T_s = ⌈p/n⌉α_rand = 0.3 ms, T_rw = ⌈p/n⌉·s·beta_write = 2·2.0833 ms = 4.1667 ms; total 7.15 ms."),
]


# Shared-core cases checked by hand: p = 8, n = 16, m = 1, 256 KiB random reads under ETH_SH (e_shared = 0.02 ms).
SHARED_HAND = [
    ("op-hand-1dh-corrected-shared-read", "read", "1-DH", None, 12.885,
     "1-DH touches all 16 servers: T_e = max(p, mn)e + p·n·e_shared = 16·0.3 ms + 128·0.02 ms = 7.36 ms, "
     "T_x = max(ps/n, ms)v = 2^18/(120·2^20) s = 2.0833 ms, T_s = p·α_rand = 2.4 ms, T_rw = (ps/n)β = 1.0417 ms; "
     "total 12.885 ms."),
    ("op-hand-1dh-corrected-shared-write", "write", "1-DH", None, 18.7267,
     "The same request written: T_e = 16·e_write + 128·e_shared = 9.6 ms + 2.56 ms = 12.16 ms (e_shared is no "
     "operation's term), T_x = 2.0833 ms, T_s = 2.4 ms, T_rw = (ps/n)·beta_write = 2.0833 ms; total 18.7267 ms."),
    ("op-hand-2d-corrected-shared-read", "read", "2-D", 8, 4.345,
     "2-D g=8: ⌈p/g⌉ = 1 and a request touches ⌈n/g⌉ = 2 servers, so T_e = max(1, m·2)e + p·2·e_shared = 0.6 ms + "
     "16·0.02 ms = 0.92 ms, T_x = max(s/⌊n/g⌋, ms)v = 2.0833 ms, T_s = 1·α_rand = 0.3 ms, T_rw = (s/2)β = 1.0417 ms; "
     "total 4.345 ms."),
    ("op-hand-2d-corrected-shared-write", "write", "2-D", 8, 5.9867,
     "The same request written: T_e = 2·e_write + 16·e_shared = 1.2 ms + 0.32 ms = 1.52 ms, T_x = 2.0833 ms, "
     "T_s = 0.3 ms, T_rw = (s/2)·beta_write = 2.0833 ms; total 5.9867 ms."),
]

# Overlap cases checked by hand: the same p = 8, n = 16, m = 1, 256 KiB random requests, each taking the larger
# of its network side (T_e + T_x) and its storage side (T_s + T_rw).
OVERLAP_HAND = [
    ("op-hand-2d-corrected-overlap-read", "read", "2-D", 8, "ETH_OV", 3.0033,
     "As op-hand-2d-corrected-shared-read: network T_e + T_x = 0.92 ms + 2.0833 ms = 3.0033 ms, storage "
     "T_s + T_rw = 0.3 ms + 1.0417 ms = 1.3417 ms; the larger, 3.0033 ms (the sum would be 4.345 ms)."),
    ("op-hand-2d-corrected-overlap-write", "write", "2-D", 8, "ETH_OV", 3.6033,
     "As op-hand-2d-corrected-shared-write: network 1.52 ms + 2.0833 ms = 3.6033 ms, storage 0.3 ms + 2.0833 ms "
     "= 2.3833 ms; the larger, 3.6033 ms."),
    ("op-hand-1dv-corrected-overlap-read", "read", "1-DV", None, "ETH_OV", 2.5433,
     "1-DV, p <= n: network T_e = max(m, ⌈p/n⌉)·e + p·1·e_shared = 0.3 ms + 0.16 ms = 0.46 ms and T_x = s·v = "
     "2.0833 ms, so 2.5433 ms; storage T_s + T_rw = α_rand + s·β = 0.3 ms + 2.0833 ms = 2.3833 ms; the larger, "
     "2.5433 ms."),
    ("op-hand-1dv-corrected-overlap-write", "write", "1-DV", None, "ETH_OV", 4.4667,
     "1-DV, p <= n: network T_e = max(m, ⌈p/n⌉)·e_write + p·1·e_shared = 0.6 ms + 0.16 ms = 0.76 ms and "
     "T_x = s·v = 2.0833 ms, so 2.8433 ms; storage T_s + T_rw = α_rand + s·beta_write = "
     "0.3 ms + 4.1667 ms = 4.4667 ms; the larger, 4.4667 ms (storage-bound)."),
]


# Small-write cases checked by hand: p = 2, n = 4, m = 2, 32 KiB sequential requests under ETH_SW
# (v_small_write = 1e-8 s/byte).
SMALL_HAND = [
    ("op-hand-1dh-corrected-small-write", "write", "1-DH", None, 6.43661,
     "1-DH splits 32 KiB over 4 servers into 8 KiB pieces (< 16 KiB): T_e = max(p, mn)·e_write = 8·0.6 ms = 4.8 ms, "
     "T_x = max(ps/n, ms)v + p·s·v_small_write = 2^16/(120·2^20) s + 2·2^15·1e-8 s = 0.52083 ms + 0.65536 ms = "
     "1.17619 ms, T_s = p·α_seq = 0.2 ms, T_rw = (ps/n)·beta_write = 2^14·2/(120·2^20) s = 0.26042 ms; "
     "total 6.43661 ms."),
    ("op-hand-1dh-corrected-small-read", "read", "1-DH", None, 3.25104,
     "The same request read: no small-write term, T_e = 8·0.3 ms = 2.4 ms, T_x = 0.52083 ms, T_s = 0.2 ms, "
     "T_rw = 2^14/(120·2^20) s = 0.13021 ms; total 3.25104 ms."),
    ("op-hand-2d-corrected-small-write", "write", "2-D", 2, 3.28125,
     "2-D g=2 puts 16 KiB pieces on ⌈n/g⌉ = 2 servers (not below 16 KiB): T_e = max(⌈p/g⌉, m·2)·e_write = 4·0.6 ms "
     "= 2.4 ms, T_x = max(s/⌊n/g⌋, ms)v = 0.52083 ms, T_s = 1·α_seq = 0.1 ms, T_rw = (s/2)·beta_write = 0.26042 ms; "
     "total 3.28125 ms."),
    ("op-hand-2d-corrected-small-read", "read", "2-D", 2, 1.95104,
     "The same request read: T_e = 4·0.3 ms = 1.2 ms, T_x = 0.52083 ms, T_s = 0.1 ms, T_rw = (s/2)β = 0.13021 ms; "
     "total 1.95104 ms."),
]


def main() -> None:
    params = {"ETH": ETH, "IB": IB, "ODD": ODD}
    cases: list[dict] = []
    hand: list[dict] = []

    def add(variant: str, layout: str, p: int, n: int, m: int, g: int | None, s: int, random: bool,
            pname: str, cid: str | None = None) -> str:
        if variant == "printed":
            row, coef = printed(layout, p, n, m, s, g)
            extra = {}
        else:
            row, _ = printed(layout, p, n, m, s, g)
            sides, coef = corrected(layout, p, n, m, s, g)
            extra = {"max_sides": sides}
        cid = cid or f"{variant}-{layout}-{len(cases):04d}"
        case = {"id": cid, "variant": variant, "layout": layout, "p": p, "n": n, "m": m, "g": g, "s": s,
                "random": random, "params": params[pname], "branch": row, **extra,
                "expected": expected(coef, params[pname], random)}
        cases.append(case)
        return cid

    g: int | None  # the 2-D group size of a case, None for the other layouts
    for tag, pname, random, p, n, g, m, s, by_layout in WORKED_ROWS:
        for layout, value in by_layout.items():
            cid = add("printed", layout, p, n, m, g if layout == "2-D" else None, s, random, pname,
                      f"digest-2.9-{tag}-{layout}")
            hand.append({"id": cid, "checked_against": f"docs/seeds.md §2.9 row {tag}: {layout} = {value} ms "
                         "(003 Table 2 as printed, 003 Table 3 parameters)", "ms": value})
    for cid, variant, layout, p, n, m, g, s, random, pname, note, ms in EXTRA_HAND:
        add(variant, layout, p, n, m, g, s, random, pname, cid)
        hand.append({"id": cid, "checked_against": note, "ms": ms})
    for h in hand:  # the table code must reproduce every hand-computed total
        got = next(c for c in cases if c["id"] == h["id"])["expected"]["total"] * 1e3
        if abs(got - h["ms"]) > 5e-5:
            raise SystemExit(f"{h['id']}: generated {got:.6f} ms, hand-checked {h['ms']} ms")
    for variant in ("printed", "corrected"):
        for layout, p, n, m, g, s, random, pname in grid():
            add(variant, layout, p, n, m, g, s, random, pname)

    # Per-operation cases: a separate list, so a reader of the five-parameter cases is unaffected.
    params |= {"ETH_RW": ETH_RW, "ODD_RW": ODD_RW, "IB_BW": IB_BW, "ODD_EW": ODD_EW, "ETH_SH": ETH_SH,
               "ODD_SH": ODD_SH, "ETH_OV": ETH_OV, "ODD_OV": ODD_OV, "IB_OV": IB_OV, "ETH_SW": ETH_SW,
               "ODD_SW": ODD_SW}
    op_cases: list[dict] = []
    op_hand: list[dict] = []

    def add_op(op: str, variant: str, layout: str, p: int, n: int, m: int, g: int | None, s: int, random: bool,
               pname: str, cid: str | None = None) -> str:
        row, coef = printed(layout, p, n, m, s, g)
        extra = {}
        if variant == "corrected":
            sides, coef = corrected(layout, p, n, m, s, g)
            extra = {"max_sides": sides}
        cid = cid or f"op-{variant}-{layout}-{op}-{len(op_cases):04d}"
        op_cases.append({"id": cid, "op": op, "variant": variant, "layout": layout, "p": p, "n": n, "m": m, "g": g,
                         "s": s, "random": random, "params": params[pname], "branch": row, **extra,
                         "expected": expected(coef, for_op(params[pname], op), random, p * touched(layout, n, g),
                                              small_bytes(layout, p, n, g, s))})
        return cid

    for cid, op, ms, note in OP_HAND:
        add_op(op, "printed", "1-DV", 8, 16, 1, None, 256 * KIB, True, "ETH_RW", cid)
        op_hand.append({"id": cid, "checked_against": note, "ms": ms})
    for cid, op, layout, g, ms, note in SHARED_HAND:
        add_op(op, "corrected", layout, 8, 16, 1, g, 256 * KIB, True, "ETH_SH", cid)
        op_hand.append({"id": cid, "checked_against": note, "ms": ms})
    for h in op_hand:
        got = next(c for c in op_cases if c["id"] == h["id"])["expected"]["total"] * 1e3
        if abs(got - h["ms"]) > 5e-5:
            raise SystemExit(f"{h['id']}: generated {got:.6f} ms, hand-checked {h['ms']} ms")
    for variant in ("printed", "corrected"):
        for k, (layout, p, n, m, g, s, random, _) in enumerate(grid()):
            if k % 9:  # every ninth point of the grid: every layout and row, under each per-op platform
                continue
            pname = OP_PARAMS[(k // 9) % len(OP_PARAMS)]
            for op in ("read", "write"):
                add_op(op, variant, layout, p, n, m, g, s, random, pname)

    for k, (layout, p, n, m, g, s, random, _) in enumerate(grid()):
        if k % 9 != 4:  # another ninth of the grid, under each overlapped platform
            continue
        pname = OV_PARAMS[(k // 9) % len(OV_PARAMS)]
        for op in ("read", "write"):
            add_op(op, "corrected", layout, p, n, m, g, s, random, pname)
    # after the grids, so the cases before keep their ids
    for cid, op, layout, g, pname, ms, note in OVERLAP_HAND:
        add_op(op, "corrected", layout, 8, 16, 1, g, 256 * KIB, True, pname, cid)
        got = op_cases[-1]["expected"]["total"] * 1e3
        if abs(got - ms) > 5e-5:
            raise SystemExit(f"{cid}: generated {got:.6f} ms, hand-checked {ms} ms")
        op_hand.append({"id": cid, "checked_against": note, "ms": ms})
    # small writes, after everything before so those cases keep their ids
    for cid, op, layout, g, ms, note in SMALL_HAND:
        add_op(op, "corrected", layout, 2, 4, 2, g, 32 * KIB, False, "ETH_SW", cid)
        got = op_cases[-1]["expected"]["total"] * 1e3
        if abs(got - ms) > 5e-5:
            raise SystemExit(f"{cid}: generated {got:.6f} ms, hand-checked {ms} ms")
        op_hand.append({"id": cid, "checked_against": note, "ms": ms})
    # every layout on 4 and 8 servers around the limit: pieces below, at and above 16 KiB, 1 to 2 servers
    small_grid = [("1-DV", None), ("1-DH", None), ("2-D", 2), ("2-D", 4)]
    for k, (n, (layout, g), s) in enumerate((n, lg, s) for n in (4, 8) for lg in small_grid
                                              for s in (8 * KIB, 24 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB)):
        if g is not None and g >= n:
            continue
        p, m = (4, 2) if k % 2 else (8, 8)
        for op in ("read", "write"):
            add_op(op, "corrected", layout, p, n, m, g, s, k % 3 == 0, SW_PARAMS[k % 2])

    doc = {
        "format": "pfslayout-cost-vectors/1",
        "units": {"time": "s", "size": "bytes"},
        "generator": "operator/tests/vectors/generate_cost_vectors.py (exact rationals, independent of pfslayout)",
        "hand_checked": hand,
        "cases": cases,
        "op_hand_checked": op_hand,
        "op_cases": op_cases,
    }
    json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
