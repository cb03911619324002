"""`pfslayout summarise` — what a traced run did under each of some directories, as the small
`pfslayout-trace-summary/1` documents a LayoutPolicy keeps and re-plans from (planner/summary.py).

The operator's trace collector Job runs it on the per-rank files it copied from OrangeFS; `--marker`
prints one line `<marker> <json>` the operator finds in the Job's log among anything else printed."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from pfslayout.cli._output import console, print_json
from pfslayout.errors import InputError
from pfslayout.planner.summary import summarise
from pfslayout.traces import load_trace


def run(trace: str, fmt: str | None, paths: list[str]) -> dict[str, Any]:
    if not paths:
        raise InputError("--path", "give at least one directory to summarise", "e.g. --path /mnt/orangefs/results")
    bad = [p for p in paths if not p.startswith("/")]
    if bad:
        raise InputError("--path", f"{bad[0]!r} is not an absolute client path", "give e.g. /mnt/orangefs/results")
    loaded = load_trace(trace, fmt)
    found = summarise(loaded, paths)
    return {"format": "pfslayout-trace-summaries/1", "requests": len(loaded), "ranks": int(loaded.rank.max()) + 1,
            "summaries": {p: s.model_dump(mode="json") for p, s in found.items()},
            "unmatched": sorted(set(paths) - set(found))}


def register(app: typer.Typer) -> None:
    @app.command("summarise")
    def command(
        trace: Annotated[str, typer.Option("--trace", help="trace file or shim trace directory")],
        path: Annotated[list[str], typer.Option("--path", help="a directory (client path) to summarise; repeat")],
        fmt: Annotated[str | None, typer.Option("--format", help="shim, darshan or csv (default: detect)")] = None,
        marker: Annotated[str | None, typer.Option(
            "--marker", help="print one line '<marker> <compact json>' (for a log reader)")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
    ) -> None:
        """Reduce a trace to per-directory request summaries (p, m, size, random, count rows)."""
        result = run(trace, fmt, path)
        if marker:
            print(f"{marker} {json.dumps(result, separators=(',', ':'))}")
        elif as_json:
            print_json(result)
        else:
            for p, s in result["summaries"].items():
                console.print(f"{p}: {s['requests']} requests by {s['ranks']} ranks on {s['files']} files "
                              f"({s['sharing']}), dominant size {s['dominant_size']} B, {len(s['rows'])} rows")
            for p in result["unmatched"]:
                console.print(f"{p}: no requests")
