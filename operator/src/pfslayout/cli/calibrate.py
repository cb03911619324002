"""`pfslayout calibrate` — fit e, v, α_seq, α_rand, β from probe or IOR measurements, with fit quality.

With ``--json`` the document has the five parameters at its top level, so it can be passed straight
back as ``--params`` to ``cost`` and ``plan``. ``--design`` instead prints the probe grid to measure
(checked to identify all five parameters) and, given ``--target``s, the pfsprobe ``--grid`` documents.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pfslayout.cli._output import console, print_json
from pfslayout.errors import InputError
from pfslayout.units import parse_size, parse_sizes

MIB = float(1 << 20)


def _server_files(specs: list[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for spec in specs:
        index, sep, path = spec.partition("=")
        if not sep or not index.isdigit() or not path:
            raise InputError("--server-measurements", f"{spec!r} is not INDEX=FILE", "e.g. 0=server0.json")
        if int(index) in out:
            raise InputError("--server-measurements", f"server {index} is given twice", "one file per server")
        out[int(index)] = path
    return out


def run(measurements: list[str], fmt: str | None, servers: int | None, layout: str | None, g: int | None,
        variant: str, weighting: str, server_measurements: list[str] | None = None) -> dict[str, Any]:
    # imported here so other commands do not pay for scipy.optimize at start-up
    from pfslayout.calibration import fit, load_measurements, merge_measurements

    data = merge_measurements([load_measurements(m, fmt, servers=servers, layout=layout, g=g) for m in measurements])
    per_server = {i: load_measurements(path, "probe") for i, path in _server_files(server_measurements or []).items()}
    return fit(data, variant=variant, weighting=weighting, per_server=per_server or None).to_dict()


def _targets(specs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        key, sep, path = spec.partition("=")
        layout, _, g = key.partition(":")
        if not sep or not path or layout not in ("1-DH", "1-DV", "2-D") or (layout == "2-D") != bool(g) or \
                (g and not g.isdigit()):
            raise InputError("--target", f"{spec!r} is not LAYOUT=DIR", "use 1-DH=DIR, 1-DV=DIR or 2-D:G=DIR")
        out[key] = path
    return out


def design(servers: int | None, nodes: int, ranks_per_node: int, sizes: str | None, max_configs: int | None,
           targets: list[str], backend: str, variant: str, profile: str | None = None,
           min_bytes: str | None = None) -> dict[str, Any]:
    from pfslayout.calibration import design_grid, profile_grid

    if servers is None:
        raise InputError("--servers", "is required with --design", "pass the number of data servers")
    size_list = parse_sizes(sizes) if sizes else None
    floor = parse_size(min_bytes, "--min-bytes", minimum=0) if min_bytes is not None else None
    if profile is not None:
        # a named grid (OrangeFSCluster spec.calibration.profile); --sizes/--max-configs/--min-bytes still
        # override it
        grid = profile_grid(profile, servers, nodes, ranks_per_node, variant=variant, sizes=size_list,
                            max_configs=max_configs, min_bytes_per_rank=floor)
    else:
        kwargs: dict[str, Any] = {"max_configs": max_configs, "variant": variant, "min_bytes_per_rank": floor or 0}
        if size_list:
            kwargs["sizes"] = size_list
        grid = design_grid(servers, nodes, ranks_per_node, **kwargs)
    doc = grid.to_dict()
    if targets:
        doc["pfsprobe_grids"] = grid.pfsprobe_grids(_targets(targets), backend=backend)
    return doc


def _human_design(doc: dict[str, Any]) -> None:
    cells = doc["cells"]
    table = Table(title=f"Probe grid: {len(cells)} cells, rank {doc['design']['rank']}/5, "
                        f"condition {doc['design']['condition']:.3g}")
    for col in ("layout", "placement", "p", "m", "request sizes (x requests per rank)", "patterns", "ops"):
        table.add_column(col)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["layout"], c["g"], c["placement"], c["p"], c["m"]), []).append(c)
    for (layout, g, placement, p, m), group in groups.items():
        table.add_row(layout + (f" g{g}" if g else ""), placement, str(p), str(m),
                      ",".join(f"{s}x{r}" for s, r in sorted({(c["request_size"], c["requests_per_rank"])
                                                               for c in group})),
                      ",".join(sorted({c["pattern"] for c in group})), ",".join(sorted({c["op"] for c in group})))
    (console if console.is_terminal else Console(width=120)).print(table)
    print("identifies: " + ", ".join(doc["design"]["identified"]) + "  (--json for the cells and pfsprobe grids)")


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _human(result: dict[str, Any]) -> None:
    # piped output defaults to 80 columns, too narrow for the residual table
    out = console if console.is_terminal else Console(width=120)
    quality = result["fit"]
    table = Table(title=f"Calibrated cost parameters ({quality['variant']} model, n={quality['servers']} servers)")
    for col in ("parameter", "value", "±stderr", "reads as", "determined"):
        table.add_column(col, justify="left" if col in ("parameter", "reads as") else "right")
    # What each term measured, not what it is assumed to be: on a lab cluster with tmpfs storage β is the
    # shaped per-server link, not a disk; v is whatever limits one client node (its link, its CPU).
    reads: dict[str, Callable[[float], str]] = {
        "e": lambda x: f"{x * 1e3:.4g} ms per server message",
        "v": lambda x: f"{1 / x / MIB:.4g} MiB/s per client node" if x > 0 else "unbounded",
        "alpha_seq": lambda x: f"{x * 1e3:.4g} ms per sequential start",
        "alpha_rand": lambda x: f"{x * 1e3:.4g} ms per random start",
        "beta": lambda x: f"{1 / x / MIB:.4g} MiB/s per server" if x > 0 else "unbounded",
    }
    # writes' own terms, when the fit separated them (docs/calibration.md "Reads and writes")
    if "e_write" in result:
        reads["e_write"] = lambda x: f"{x * 1e3:.4g} ms per server message (writes)"
    if "beta_write" in result:
        reads["beta_write"] = lambda x: f"{1 / x / MIB:.4g} MiB/s per server (writes)" if x > 0 else "unbounded"
    if "e_shared" in result:  # docs/calibration.md "Shared cores"
        reads["e_shared"] = lambda x: f"{x * 1e3:.4g} ms per message of all ranks (shared cores)"
    if "v_small_write" in result:  # docs/calibration.md "Small writes"
        reads["v_small_write"] = lambda x: f"{x * 1e9:.4g} ns per byte of all ranks (small split writes)"
    poor = set(quality.get("poorly_determined", []))
    for name, show in reads.items():
        value = result[name]
        verdict = "yes" if quality["identified"][name] else "[yellow]poorly[/yellow]" if name in poor \
            else "[red]no[/red]"
        table.add_row(name, f"{value:.4g}", _fmt(quality["stderr"][name], 2), show(value), verdict)
    out.print(table)
    out.print(
        f"cells {quality['cells']}   R² {_fmt(quality['r2'])} (in the fit's weighting "
        f"{_fmt(quality.get('fit_r2'))})   RMSE {_fmt(quality['rmse_s'])} s   "
        f"relative error median {_fmt(quality['median_relative_error'], 3)}, "
        f"max {_fmt(quality['max_relative_error'], 3)}   "
        f"rank {quality['rank']}/{len(quality['identified'])}, condition {_fmt(quality['condition'], 3)}"
    )
    if quality.get("per_operation"):
        out.print(f"per operation: {quality['per_operation']}")
    if quality.get("shared_cores"):
        out.print(f"shared cores: {quality['shared_cores']}")
    if quality.get("overlap"):
        out.print(f"overlap: {quality['overlap']}")
    if quality.get("small_writes"):
        out.print(f"small writes: {quality['small_writes']}")
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
    if result.get("servers"):
        per = Table(title="Per-server storage parameters (empty: inherits the global value)")
        for col in ("server", "alpha_seq", "alpha_rand", "beta", "MiB/s", "cells", "R²", "median rel.err"):
            per.add_column(col, justify="right")
        quality = {q["index"]: q for q in result["fit"].get("servers", [])}
        for s in result["servers"]:
            q = quality.get(s["index"], {})
            beta = s.get("beta")
            per.add_row(str(s["index"]), _fmt(s.get("alpha_seq")), _fmt(s.get("alpha_rand")), _fmt(beta),
                        f"{1 / beta / MIB:.4g}" if beta else "", str(q.get("cells", "")), _fmt(q.get("r2")),
                        _fmt(q.get("median_relative_error"), 3))
        out.print(per)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        measurements: Annotated[list[str] | None, typer.Option(
            "--measurements",
                help="pfsprobe/1 JSON or IOR JSON output to fit (repeat to fit several together)")] = None,
        fmt: Annotated[str | None, typer.Option("--format", help="probe or ior (default: detect)")] = None,
        servers: Annotated[int | None, typer.Option(
            "--servers", help="data servers (IOR input and --design)")] = None,
        layout: Annotated[str | None, typer.Option(
            "--layout", help="layout of IOR's test directory (default: from its path, e.g. .../2-D-g2/...)")] = None,
        g: Annotated[int | None, typer.Option("--g", help="2-D group count for --layout 2-D")] = None,
        variant: Annotated[str, typer.Option("--variant", help="cost model: printed or corrected")] = "corrected",
        weighting: Annotated[str, typer.Option(
            "--weighting", help="relative (minimise relative error, default) or absolute")] = "relative",
        design_grid: Annotated[bool, typer.Option(
            "--design", help="print the probe grid to measure instead of fitting")] = False,
        nodes: Annotated[int, typer.Option("--nodes", help="client nodes (--design)")] = 1,
        ranks_per_node: Annotated[int, typer.Option("--ranks-per-node", help="ranks per node (--design)")] = 1,
        sizes: Annotated[str | None, typer.Option(
            "--sizes", help="request sizes (--design), e.g. 4K,64K,1M,4M")] = None,
        max_configs: Annotated[int | None, typer.Option(
            "--max-configs",
                help="keep this many D-optimal configurations (--design; default: full factorial)")] = None,
        target: Annotated[list[str] | None, typer.Option(
            "--target", help="LAYOUT[:G]=DIR realising a layout, repeatable (--design: emit pfsprobe grids)")] = None,
        backend: Annotated[str, typer.Option("--backend", help="pfsprobe backend for --target grids")] = "posix",
        profile: Annotated[str | None, typer.Option(
            "--profile", help="named grid (--design): quick or standard, as OrangeFSCluster "
            "spec.calibration.profile; default: the full factorial over --sizes")] = None,
        min_bytes: Annotated[str | None, typer.Option(
            "--min-bytes", help="raise requests per rank so each rank moves at least this much per repetition "
            "(--design), e.g. 4M; default: the profile's, else 0")] = None,
        server_measurements: Annotated[list[str] | None, typer.Option(
            "--server-measurements", help="INDEX=FILE: a pfsprobe/1 probe pinned to server INDEX (servers = 1); "
            "fits that server's alpha and beta (repeatable)")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ) -> None:
        """Fit e, v, alpha_seq, alpha_rand, beta by non-negative least squares, with R², residuals and warnings."""
        if design_grid:
            if measurements is not None:
                raise InputError("--design", "cannot be combined with --measurements",
                                 "design a grid first, measure it, then fit with --measurements")
            doc = design(servers, nodes, ranks_per_node, sizes, max_configs, target or [], backend, variant,
                         profile, min_bytes)
            print_json(doc) if as_json else _human_design(doc)
            return
        if not measurements:
            raise InputError("--measurements", "is required", "pass pfsprobe's or IOR's JSON (or --design for a grid)")
        result = run(measurements, fmt, servers, layout, g, variant, weighting, server_measurements)
        if as_json:
            print_json(result)
        else:
            _human(result)
