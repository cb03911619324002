"""`pfslayout cost` — the per-request cost of one layout (003 Table 2), split into its four terms."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from pfslayout.cli._options import ParamsOption, VariantOption
from pfslayout.cli._output import console, print_json
from pfslayout.costmodel import cost as model_cost
from pfslayout.costmodel import resolve_params


def run(layout: str, p: int, n: int, m: int, s: int, g: int | None, random: bool, params: str | None,
        variant: str) -> dict[str, Any]:
    prm = resolve_params(params)
    if layout != "2-D" and g is not None:
        g = None  # g only shapes 2-D; accepted elsewhere so one command line can loop over layouts
    return model_cost(layout, p, n, m, s, g, random=random, params=prm, variant=variant).as_dict()


def register(app: typer.Typer) -> None:
    @app.command("cost")
    def cost(
        layout: Annotated[str, typer.Option("--layout", help="1-DV, 1-DH or 2-D")],
        p: Annotated[int, typer.Option("--p", help="concurrent I/O processes")],
        n: Annotated[int, typer.Option("--n", help="data servers")],
        m: Annotated[int, typer.Option("--m", help="processes on one client node")],
        s: Annotated[int, typer.Option("--s", help="request size, bytes")],
        g: Annotated[int | None, typer.Option("--g", help="storage groups (2-D only)")] = None,
        random: Annotated[bool, typer.Option("--random", help="random access (alpha_rand)")] = False,
        params: ParamsOption = None,
        variant: VariantOption = "corrected",
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ) -> None:
        """Per-request cost T = T_e + T_x + T_s + T_rw in seconds (seeds' Ethernet values by default)."""
        result = run(layout, p, n, m, s, g, random, params, variant)
        if as_json:
            print_json(result)
            return
        table = Table(title=f"{layout} cost, seconds ({variant})")
        for key in ("T_e", "T_x", "T_s", "T_rw", "total"):
            table.add_column(key, justify="right")
        table.add_row(*(f"{result[k]:.6g}" for k in ("T_e", "T_x", "T_s", "T_rw", "total")))
        console.print(table)
