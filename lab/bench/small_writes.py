"""Writes against reads by the size of each server's piece (issue 33 item 2's remaining miss), measured in
one run and printed (not asserted): on the product loop's cluster (4 server pods on the real node, links
shaped as `product_loop.py` shapes them), a CostCalibration over request sizes whose pieces fall below and
above OrangeFS's small-I/O limit, for its measurements only.

    eval "$(e2e/harness/cluster.sh env)"      # the local cluster with its real node
    python lab/bench/small_writes.py [--sizes 12K,24K,32K] [--rate 200mbit] [--json out.json]

OrangeFS sends a request's data inside the request message when each server's piece fits its small-I/O
limit (PINT_SMALL_IO_MAXSIZE, 16 KiB less the header); larger pieces go through a flow that pipelines the
network and the storage. The model's pieces are the layout's: 1-DV a whole request per server, 2-D:g
s/g, 1-DH s/n (strips of at least 4 KiB). With 12K, 24K and 32K on 4 servers the pieces are 4–32 KiB,
so each layout is measured on both sides of the limit. Prints, per layout, size, p and pattern: the piece,
the write and read medians and their ratio.

Needs root (nsenter, tc) and the local cluster, as `product_loop.py` does; uses its namespace.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from pfslab import loop
from pfslayout.errors import InputError
from pfslayout.units import parse_sizes
from pfstestkit.real import place

SERVERS = 4


def script(name: str) -> ModuleType:
    """A bench script beside this one (not a package): the product loop's shaping and measurement helpers,
    refit_loop's piece rule."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table(cells: list[dict[str, Any]]) -> list[str]:
    pieces = script("refit_loop").pieces
    by: dict[tuple[int, str, int, int, str], dict[str, float]] = defaultdict(dict)
    for c in cells:
        by[(c["request_size"], c["layout"], c["g"] or 0, c["p"], c["pattern"])][c["op"]] = c["time"]
    out = ["size layout p pattern servers×piece write read write/read"]
    for (size, layout, g, p, pattern), t in sorted(by.items()):
        if {"write", "read"} <= set(t):
            name = f"{layout}:{g}" if g else layout
            k, piece = pieces(layout, g or None, SERVERS, size)
            out.append(f"{size >> 10}K {name} {p} {pattern} {k}x{piece >> 10}K "
                       f"{t['write']:.3f} {t['read']:.3f} {t['write'] / t['read']:.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="12K,24K,32K")
    ap.add_argument("--rate", default="200mbit")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the measured cells here")
    args = ap.parse_args()
    pl = script("product_loop")
    try:
        sizes = parse_sizes(args.sizes, "--sizes")
    except InputError as err:
        sys.exit(f"small-writes: {err}")
    c = pl.Cluster("small-writes")
    if c.mode != "local":
        sys.exit("small-writes: needs root and the local cluster (as lab/bench/product_loop.py)")
    veths: list[str] = []
    try:
        pl.bring_up(c, SERVERS, args.rate, veths)
        cc = loop.calibration_manifest("small-writes", pl.OFS_NAME, sizes, ranks=args.ranks, max_configs=None,
                                       requests=8, repetitions=args.repetitions, min_bytes=4 << 20)
        c.apply([place(cc, c.mode)], pl.NS)
        cells = [pl.calibration_cell(x) for x in pl.measurements(c, pl.wait_cc(c, "small-writes", 1800), SERVERS).cells]
        if args.json:
            args.json.write_text(json.dumps({"servers": SERVERS, "rate": args.rate, "cells": cells}, indent=1) + "\n")
        print("\n".join(table(cells)))
    finally:
        pl.tear_down(c, veths)


if __name__ == "__main__":
    main()
