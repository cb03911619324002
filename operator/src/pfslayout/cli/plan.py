"""`pfslayout plan` — the layout per directory (or file) for a traced run or a workload description."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from pfslayout.cli._options import ParamsOption, VariantOption
from pfslayout.cli._output import console, print_json
from pfslayout.costmodel import resolve_params
from pfslayout.errors import InputError
from pfslayout.planner import DEFAULT_DELTA, Plan, load_workloads, plan_from_file, plan_workload


def run(trace: str | None, fmt: str | None, workload: str | None, servers: int, params: str | None, variant: str,
        per: str, delta: float, groups: list[int] | None, cb_nodes: int | None = None) -> Plan:
    if (trace is None) == (workload is None):
        raise InputError("--trace", "give exactly one of --trace FILE and --workload FILE")
    if servers < 1:
        raise InputError("--servers", f"must be at least 1 (got {servers})", "pass the number of data servers")
    prm = resolve_params(params)
    if workload is not None:
        return plan_workload(load_workloads(workload), servers, prm, variant, delta, groups)
    assert trace is not None  # exactly one of the two was given
    return plan_from_file(trace, fmt, servers, prm, variant, delta, per=per, groups=groups, cb_nodes=cb_nodes)


def _show(plan: Plan) -> None:
    for d in plan.decisions:
        table = Table(title=f"{d.target} ({d.sharing}, {d.requests} requests) → {d.choice} [{d.mode}]")
        for col in ("candidate", "total s", "network s", "storage s"):
            table.add_column(col, justify="right" if col != "candidate" else "left")
        for c in sorted(d.candidates, key=lambda c: c.total):
            table.add_row(c.label, f"{c.total:.6g}", f"{c.network:.6g}", f"{c.storage:.6g}")
        console.print(table)
        for key, value in d.hints.xattrs.items():
            console.print(f"  setfattr -n {key} -v '{value}' <dir>")
        if d.hybrid:
            console.print(f"  hybrid replicas: {', '.join(r.label for r in d.hybrid.replicas)}")
        if d.collective:
            for cb_key, cb_value in d.collective.hints.items():
                console.print(f"  collective hint {cb_key}={cb_value}  (shim config rules[].collective)")
        for note in d.assumptions:
            console.print(f"  assumption: {note}", soft_wrap=True)
        console.print(f"  {d.explanation}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan(
        servers: Annotated[int, typer.Option("--servers", help="number of OrangeFS data servers (n)")],
        trace: Annotated[str | None, typer.Option("--trace", help="trace file or shim trace directory")] = None,
        fmt: Annotated[str | None, typer.Option("--format", help="shim, darshan or csv (default: detect)")] = None,
        workload: Annotated[str | None, typer.Option(
            "--workload", help="workload description file (JSON/YAML) instead of a trace")] = None,
        params: ParamsOption = None,
        variant: VariantOption = "corrected",
        per: Annotated[str, typer.Option("--per", help="directory, file or both")] = "directory",
        delta: Annotated[float, typer.Option("--delta", help="hybrid threshold on the best two's gap")] = DEFAULT_DELTA,
        g: Annotated[list[int] | None, typer.Option("--g", help="extra 2-D group counts to cost")] = None,
        cb_nodes: Annotated[int | None, typer.Option(
            "--cb-nodes", help="cost collective I/O with this many aggregators instead of choosing")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ) -> None:
        """Choose 1-DH, 1-DV or 2-D per directory/file from the cost model, with OrangeFS hints."""
        result = run(trace, fmt, workload, servers, params, variant, per, delta, g, cb_nodes)
        if as_json:
            print_json(result.model_dump(mode="json"))
        else:
            _show(result)
