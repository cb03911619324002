"""`pfslayout cost-map` — a picture of which layout wins over process count × request size (003 Fig. 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pfslayout.cli._options import VariantOption
from pfslayout.cli._output import console, print_json
from pfslayout.costmodel import SEEDS, resolve_params
from pfslayout.costmodel.costmap import CostMap, cost_map
from pfslayout.costmodel.formulas import check_variant
from pfslayout.errors import InputError

COLOURS = {"1-DV": "#4477aa", "1-DH": "#ee6677", "2-D": "#228833"}


def _size_label(b: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def draw(cm: CostMap, png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    order = list(COLOURS)
    codes = [[order.index(w.split("(")[0]) for w in row] for row in cm.winner]
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * len(cm.s), 1.3 + 0.42 * len(cm.p)), dpi=110)
    ax.imshow(codes, cmap=ListedColormap([COLOURS[k] for k in order]), vmin=0, vmax=2, origin="lower",
              aspect="auto", interpolation="nearest")
    for i, row in enumerate(cm.winner):
        for j, w in enumerate(row):
            if w.startswith("2-D"):
                ax.text(j, i, w[4:-1], ha="center", va="center", fontsize=7, color="white")
    ax.set_xticks(range(len(cm.s)), [_size_label(s) for s in cm.s], fontsize=8)
    ax.set_yticks(range(len(cm.p)), [f"{p} (m={m})" for p, m in zip(cm.p, cm.m)], fontsize=8)
    ax.set_xlabel("request size s (bytes)")
    ax.set_ylabel("concurrent processes p (processes per client node m)")
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[Patch(color=COLOURS[k], label=k + (" (g shown)" if k == "2-D" else "")) for k in order],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)


def run(n: int, png: str | None, clients: int | None, params: str | None, variant: str, random: bool,
        g: int | None) -> tuple[CostMap, str]:
    check_variant(variant)
    prm = resolve_params(params)
    cm = cost_map(n, clients, prm, variant, random, g)
    if params is not None and str(params).lower() in SEEDS:
        name = params
    else:
        name = Path(params).name if params else "ethernet"
    title = (f"Cheapest layout per request: n={n} servers, {cm.clients} client nodes, {name} parameters,\n"
             f"{variant} model, {'random' if random else 'sequential'} access"
             + (f", 2-D with g={g}" if g else ", 2-D with the best divisor g of n"))
    if png is not None:
        path = Path(png)
        if path.suffix.lower() != ".png":
            raise InputError("--png", f"{png} must end in .png", "name the output file something.png")
        draw(cm, path, title)
    return cm, title


def register(app: typer.Typer) -> None:
    @app.command("cost-map")
    def costmap(
        n: Annotated[int, typer.Option("--n", help="data servers")],
        png: Annotated[str | None, typer.Option("--png", help="write the picture here")] = None,
        clients: Annotated[int | None, typer.Option(
            "--clients", help="client nodes; m = ceil(p/clients) (default 3n, the seeds' ratio)")] = None,
        params: Annotated[str | None, typer.Option(
            "--params", help="parameters file, or 'ethernet'/'infiniband' (default ethernet)")] = None,
        variant: VariantOption = "corrected",
        random: Annotated[bool, typer.Option("--random", help="random access (alpha_rand)")] = False,
        g: Annotated[int | None, typer.Option("--g", help="fix the 2-D group count")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the grid as one JSON document")] = False,
    ) -> None:
        """Draw which of 1-DH, 1-DV, 2-D is cheapest over (p, s), like 003 Fig. 4."""
        if png is None and not as_json:
            raise InputError("--png", "is required unless --json is given", "pass --png FILE.png")
        cm, title = run(n, png, clients, params, variant, random, g)
        if as_json:
            doc = cm.as_dict()
            doc["png"] = png
            print_json(doc)
        else:
            console.print(f"wrote {png}: {title.replace(chr(10), ' ')}")
