"""`pfslayout calibrate` — fit e, v, α_seq, α_rand, β from probe or IOR measurements, with fit quality.

With ``--json`` the document has the five parameters at its top level, so it can be passed straight
back as ``--params`` to ``cost`` and ``plan``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from pfslayout.cli._output import console, print_json

MIB = float(1 << 20)


def run(measurements: str, fmt: str | None, servers: int | None, layout: str | None, g: int | None,
        variant: str, weighting: str) -> dict[str, Any]:
    # imported here so other commands do not pay for scipy.optimize at start-up
    from pfslayout.calibration import fit, load_measurements

    data = load_measurements(measurements, fmt, servers=servers, layout=layout, g=g)
    return fit(data, variant=variant, weighting=weighting).to_dict()


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _human(result: dict[str, Any]) -> None:
    # piped output defaults to 80 columns, too narrow for the residual table
    out = console if console.is_terminal else Console(width=120)
    quality = result["fit"]
    table = Table(title=f"Calibrated cost parameters ({quality['variant']} model, n={quality['servers']} servers)")
    for col in ("parameter", "value", "±stderr", "reads as", "identified"):
        table.add_column(col, justify="left" if col in ("parameter", "reads as") else "right")
    reads = {
        "e": lambda x: f"{x * 1e3:.4g} ms per connection",
        "v": lambda x: f"{1 / x / MIB:.4g} MiB/s network" if x > 0 else "unbounded",
        "alpha_seq": lambda x: f"{x * 1e3:.4g} ms per sequential start",
        "alpha_rand": lambda x: f"{x * 1e3:.4g} ms per random start",
        "beta": lambda x: f"{1 / x / MIB:.4g} MiB/s disk" if x > 0 else "unbounded",
    }
    for name, show in reads.items():
        value = result[name]
        table.add_row(name, f"{value:.4g}", _fmt(quality["stderr"][name], 2), show(value),
                      "yes" if quality["identified"][name] else "[red]no[/red]")
    out.print(table)
    out.print(
        f"cells {quality['cells']}   R² {_fmt(quality['r2'])}   RMSE {_fmt(quality['rmse_s'])} s   "
        f"relative error median {_fmt(quality['median_relative_error'], 3)}, max {_fmt(quality['max_relative_error'], 3)}   "
        f"rank {quality['rank']}/5, condition {_fmt(quality['condition'], 3)}"
    )
    worst = sorted(result["cells"], key=lambda c: -abs(c["relative_error"] or 0.0))[:5]
    cells = Table(title="Largest relative residuals")
    for col in ("cell", "layout", "op", "p", "m", "bytes", "measured s", "model s", "rel.err"):
        cells.add_column(col, justify="left" if col in ("cell", "layout", "op") else "right", no_wrap=True)
    for c in worst:
        layout = c["layout"] + (f" g{c['g']}" if c["g"] else "")
        op = f"{c['op']} {'rand' if c['pattern'] == 'random' else 'seq'}"
        cells.add_row(c["source"], layout, op, str(c["p"]), str(c["m"]), str(c["request_size"]),
                      f"{c['measured_s']:.4g}", f"{c['predicted_s']:.4g}", _fmt(c["relative_error"], 2))
    out.print(cells)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        measurements: Annotated[str, typer.Option("--measurements", help="pfsprobe/1 JSON or IOR JSON output")],
        fmt: Annotated[Optional[str], typer.Option("--format", help="probe or ior (default: detect)")] = None,
        servers: Annotated[Optional[int], typer.Option(
            "--servers", help="data servers behind IOR's test directory (IOR input only)")] = None,
        layout: Annotated[Optional[str], typer.Option(
            "--layout", help="layout of IOR's test directory (default: from its path, e.g. .../2-D-g2/...)")] = None,
        g: Annotated[Optional[int], typer.Option("--g", help="2-D group count for --layout 2-D")] = None,
        variant: Annotated[str, typer.Option("--variant", help="cost model: printed or corrected")] = "corrected",
        weighting: Annotated[str, typer.Option(
            "--weighting", help="relative (minimise relative error, default) or absolute")] = "relative",
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ) -> None:
        """Fit e, v, alpha_seq, alpha_rand, beta by non-negative least squares, with R², residuals and warnings."""
        result = run(measurements, fmt, servers, layout, g, variant, weighting)
        if as_json:
            print_json(result)
        else:
            _human(result)
