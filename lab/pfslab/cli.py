"""``lab/lab``: bring the emulated cluster up and down, calibrate the model on it, and validate the
model's layout picks against measurements of every layout. docs/lab.md explains each command.

Errors are one line on stderr and exit code 2 (bad input, or the machine cannot run the lab: the line
says what is missing); a failure while measuring exits 1.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pfslab import grids, lifecycle, net, runs
from pfslab.grids import VALIDATION_SIZES_ARG
from pfslab.net import LabError
from pfslab.product import pfslayout_json
from pfslab.servers import PORT
from pfslayout.errors import InputError
from pfslayout.units import parse_size, parse_sizes

if TYPE_CHECKING:
    from pfslayout.costmodel import CostParams

REPO = Path(__file__).resolve().parents[2]
MISSING_EXIT = 3  # `lab check`: the machine cannot run the lab (the test skips on it)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="The performance lab: an emulated OrangeFS cluster that scores the cost model's layout picks.")


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"lab: {message}", err=True)
    raise typer.Exit(code)


def _sizes(text: str, flag: str = "--sizes") -> list[int]:
    try:
        return parse_sizes(text, flag)
    except InputError as err:
        _fail(str(err))
        raise  # unreachable: _fail exits


def _min_bytes(text: str) -> int:
    try:
        return parse_size(text, "--min-bytes", minimum=0)
    except InputError as err:
        _fail(f"{err} (one byte count; 0 for none)")
        raise  # unreachable: _fail exits


def _ints(flag: str, text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        _fail(f"{flag}: {text!r} is not a comma-separated list of integers")
    if any(v < 1 for v in values):
        _fail(f"{flag}: {text!r} must be positive")
    return values


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


@app.command()
def check() -> None:
    """Say whether this machine can run the lab (exit 0) or what is missing (exit 3)."""
    missing = lifecycle.missing_prerequisites()
    if missing:
        for m in missing:
            typer.echo(f"lab: missing {m}", err=True)
        raise typer.Exit(MISSING_EXIT)
    typer.echo("lab: this machine can run the lab")


@app.command()
def up(servers: Annotated[int, typer.Option(help="OrangeFS servers, one network namespace each")] = 4,
       rate: Annotated[str, typer.Option(help="shaped rate of each server link (tc: 200mbit, 1gbit)")] = "200mbit",
       client_namespaces: Annotated[int, typer.Option(
           help="0: clients in the root namespace; 1: in a namespace of their own")] = 0) -> None:
    """Create the bridge, the namespaces and shaped links, and start the servers."""
    try:
        state = lifecycle.up(servers, rate, client_namespaces)
    except LabError as e:
        _fail(str(e))
    typer.echo(f"lab: up — {state.servers} servers at {state.rate} per link, "
               f"{state.client_namespaces} client namespace(s), {state.orangefs_version}; "
               f"PVFS2TAB_FILE={state.pvfs2tab}")


@app.command()
def down() -> None:
    """Stop the servers and remove every namespace, link, mount and the state (also after a failure)."""
    try:
        removed = lifecycle.down()
    except LabError as e:
        _fail(str(e), 1)
    typer.echo(f"lab: down — removed {len(removed)} object(s)" if removed else "lab: nothing was up")


@app.command()
def status() -> None:
    """Print the lab's state, or what is left of one."""
    try:
        state = lifecycle.load()
    except LabError:
        left = lifecycle.leftovers()
        typer.echo("lab: not up" + (f"; leftovers: {', '.join(left)} (run `lab down`)" if left else ""))
        return
    typer.echo(json.dumps(state.__dict__, indent=1))


def _state_and_tools() -> tuple[lifecycle.LabState, runs.Tools]:
    try:
        return lifecycle.load(), runs.Tools.from_env()
    except LabError as e:
        _fail(str(e))
        raise  # unreachable: _fail exits


@app.command()
def calibrate(profile: Annotated[str, typer.Option(help="the core's calibration profile: quick or standard")] = "quick",
              ranks: Annotated[int, typer.Option(
                  help="ranks per client node (p = 1, 2, 4, … up to all nodes' ranks)")] = grids.CALIBRATION_PROCS,
              sizes: Annotated[str | None, typer.Option(help="the profile's request sizes instead, e.g. 4K,1M")] = None,
              out: Annotated[Path | None, typer.Option(help="also copy the probe documents and the fit here")] = None,
              min_bytes: Annotated[str, typer.Option(
                  help="bytes each rank moves per repetition at least (more requests for small sizes)")] = "4M",
              ) -> None:
    """Run the probe over the core's designed grid (one launch per p), then fit the model."""
    from pfslayout.costmodel import CostParams

    floor = _min_bytes(min_bytes)
    state, tools = _state_and_tools()
    work = lifecycle.STATE_DIR / "calibrate"
    work.mkdir(exist_ok=True)
    try:
        docs = []
        nodes = max(state.client_namespaces, 1)
        designed = grids.calibration(state.servers, profile, ranks, _sizes(sizes) if sizes else None, nodes,
                                     min_bytes=floor)
        for i, grid in enumerate(designed):
            docs += runs.run_grid(tools, grid, work, f"grid{i}", state.pvfs2tab, state.clients(ranks))
    except LabError as e:
        _fail(str(e), 1)
    try:
        fit = pfslayout_json("calibrate", "--json", *[a for d in docs for a in ("--measurements", str(d))])
    except LabError as e:
        _fail(f"the fit failed: {e}", 1)
    fit["lab_command"] = _command("calibrate")  # the report quotes how the parameters it scores were made
    (lifecycle.STATE_DIR / "calibration.json").write_text(json.dumps(fit, indent=1))
    if out:
        out.mkdir(parents=True, exist_ok=True)
        for d in docs:
            (out / d.name).write_text(d.read_text())
        (out / "calibration.json").write_text(json.dumps(fit, indent=1))
    stats = fit.get("fit", {})
    typer.echo(f"lab: calibrated from {stats.get('cells')} cells, R² {stats.get('r2', float('nan')):.3f}: "
               + ", ".join(f"{k}={v:.3g}" for k, v in CostParams.model_validate(fit).scalars().items()))


@app.command()
def validate(sizes: Annotated[str, typer.Option(help="request sizes, none of the calibration's")]
             = VALIDATION_SIZES_ARG,
             procs: Annotated[str, typer.Option(help="process counts, none of the calibration's")] = "3,6",
             rounds: Annotated[int, typer.Option(help="repetitions, each a round over the whole grid")] = 5,
             requests: Annotated[int, typer.Option(help="requests per rank per repetition")] = 16,
             min_bytes: Annotated[str, typer.Option(
                 help="bytes each rank moves per repetition at least (more requests for small sizes)")] = "4M",
             calibration: Annotated[Path | None, typer.Option(
                 help="fitted parameters (default: the lab's last `lab calibrate`)")] = None,
             report_dir: Annotated[Path, typer.Option(
                 help="where lab-validate.json and .png go")] = REPO / "docs" / "results",
             results_md: Annotated[Path, typer.Option(
                 help="the Markdown summary's file (its lab section is replaced)")] = REPO / "docs" / "results.md",
             ) -> None:
    """Measure every layout on a grid disjoint from the calibration's and score the model's picks."""
    from pfslab import report, score
    from pfslayout.calibration.measurements import load_measurements, merge_measurements
    from pfslayout.costmodel import CostParams

    # the options first: a typo is reported before the lab's state is needed
    if rounds < 1:
        _fail(f"--rounds {rounds}: at least 1")
    counts = _ints("--procs", procs)
    floor = _min_bytes(min_bytes)
    state, tools = _state_and_tools()
    fit_path = calibration or lifecycle.STATE_DIR / "calibration.json"
    if not fit_path.exists():
        _fail(f"--calibration: {fit_path} does not exist; run `lab calibrate` first or pass a fit's JSON")
    fit_doc = json.loads(fit_path.read_text())
    params = CostParams.model_validate(fit_doc)
    nodes = max(state.client_namespaces, 1)
    grid = grids.validation(state.servers, sizes=_sizes(sizes), procs=counts, requests=requests,
                            min_bytes=floor, nodes=nodes)
    cal_dir = lifecycle.STATE_DIR / "calibrate"
    cal_grids = [json.loads(p.read_text()) for p in sorted(cal_dir.glob("grid*.grid.json"))]
    if shared := grids.disjoint(cal_grids, grid):
        _fail(f"the validation grid shares {' and '.join(shared)} with the calibration's: choose other --sizes/--procs")
    work = lifecycle.STATE_DIR / "validate"
    work.mkdir(exist_ok=True)
    try:
        clients = state.clients(-(-max(counts) // nodes))  # enough ranks per node for the largest p
        docs = runs.run_rounds(tools, grid, rounds, work, "validate", state.pvfs2tab, clients)
    except LabError as e:
        _fail(str(e), 1)
    measured = merge_measurements([load_measurements(d) for d in docs])
    cells = score.group_cells(measured)
    quality = fit_doc.get("fit", {})
    calibrate_command = str(fit_doc.get("lab_command", f"(parameters from {fit_path})"))
    setup: dict[str, object] = {
             "servers": state.servers, "rate": state.rate, "client_namespaces": state.client_namespaces,
             "orangefs_version": state.orangefs_version, "commit": _commit(), "rounds": rounds,
             "requests_per_rank": requests, "min_bytes_per_rank": floor,
             "calibration": {"command": calibrate_command,
                             "cells": quality.get("cells"), "r2": quality.get("r2"),
                             "poorly_determined": quality.get("poorly_determined", [])}}
    doc = report.build_report(cells, state.servers, params, setup)
    report_dir.mkdir(parents=True, exist_ok=True)
    report.write_report(doc, report_dir / "lab-validate.json")
    report.plot_winners(doc, report_dir / "lab-validate.png")
    up_command = (f"lab/lab up --servers {state.servers} --rate {state.rate} "
                  f"--client-namespaces {state.client_namespaces}")
    command = "\n".join([up_command, calibrate_command, _command("validate")])
    setup_key = f"{state.servers} servers, {state.rate}, {state.client_namespaces} client namespaces"
    _replace_section(results_md, setup_key, report.results_markdown(doc, command))
    typer.echo(f"lab: {doc['cells']} cells, {doc['decisive']} decisive; model right in {doc['correct_decisive']} "
               f"of them, within 3% of the best in {doc['within_3pct']:.0%} of all cells, worst regret "
               f"{doc['worst_regret']:.1%}; report {report_dir / 'lab-validate.json'}")


def _params_for_hybrid(calibration: Path | None) -> tuple[CostParams, str]:
    """The cost parameters the hybrid's router uses: ``--calibration``, else the lab's last
    ``lab calibrate``, else the committed lab-validate report's fit (4 servers at 200 Mbit/s)."""
    from pfslayout.costmodel import CostParams  # at run time (the module-level one is for typing)

    candidates = [calibration] if calibration else [lifecycle.STATE_DIR / "calibration.json",
                                                    REPO / "docs" / "results" / "lab-validate.json"]
    for path in candidates:
        if path is not None and path.exists():
            doc = json.loads(path.read_text())
            body = doc.get("params", doc) if "params" in doc and "e" not in doc else doc
            where = str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
            # the lab's own fit says how it was made: the report quotes that command before its own
            return CostParams.model_validate(body), str(doc.get("lab_command") or where)
    _fail(f"--calibration: {calibration or candidates[0]} does not exist; run `lab calibrate` or pass a fit's JSON")
    raise AssertionError  # unreachable


@app.command()
def hybrid(procs: Annotated[int, typer.Option(help="ranks, one file each (p)")] = 3,
           block: Annotated[str, typer.Option(
               help="bytes each rank writes once and reads back in every phase")] = "32M",
           small: Annotated[str, typer.Option(help="request size of the small random reads")] = "16K",
           large: Annotated[str, typer.Option(help="request size of the write and the large sequential reads")] = "4M",
           rounds: Annotated[int, typer.Option(help="repetitions, each a round over every variant")] = 5,
           read_passes: Annotated[int, typer.Option(
               help="how many times the files are read back, each pass small random then large sequential")] = 1,
           pin: Annotated[bool, typer.Option(
               help="pin layouts of fewer datafiles than servers: rank k's file in slot k mod (n / datafiles), "
                    "a directory with layout LIST (as the operator does); --no-pin: OrangeFS places them at "
                    "random")] = True,
           replicas: Annotated[str | None, typer.Option(
               help="the replica set's layouts, e.g. 1-DV,1-DH (default: the model's picks per read phase)")] = None,
           calibration: Annotated[Path | None, typer.Option(
               help="fitted parameters for the router (default: the lab's last `lab calibrate`, else "
                    "docs/results/lab-validate.json's)")] = None,
           report: Annotated[Path | None, typer.Option(
               help="the JSON report (default: docs/results/lab-hybrid.json, lab-hybrid-reads-N.json with N > 1 "
                    "read passes; under docs/results/setups/<setup>/ for a setup other than 4 servers at "
                    "200mbit with one client namespace)")] = None,
           results_md: Annotated[Path, typer.Option(
               help="the Markdown summary's file (its lab-hybrid section — lab-hybrid-reads-N with N > 1 "
                    "read passes — is replaced)")] = REPO / "docs" / "results.md",
           ) -> None:
    """A mixed workload (written once, then read back in passes of small random and large sequential
    reads) on every static layout, the default and the shim's replica routing: gain, distance to the
    per-phase oracle, sync cost, break-even."""
    from pfslab.hybrid.measure import RunTools, run
    from pfslab.hybrid.plan import default_phases, make_plan
    from pfslab.hybrid.report import build_report

    state, tools = _state_and_tools()
    if rounds < 1 or procs < 1 or read_passes < 1:
        _fail(f"--rounds {rounds} / --procs {procs} / --read-passes {read_passes}: at least 1")
    params, params_from = _params_for_hybrid(calibration)
    try:
        phases = default_phases(_sizes(small)[0], _sizes(large)[0], read_passes)
        addresses = [f"tcp://{net.server(i).ip}:{PORT}" for i in range(state.servers)] if pin else []
        plan = make_plan(state.servers, procs, _sizes(block)[0], phases, params,
                         [k.strip() for k in replicas.split(",")] if replicas else None, addresses=addresses)
        run_tools = RunTools.from_env(tools)
    except (ValueError, LabError) as e:
        _fail(str(e))
        raise  # unreachable
    work = lifecycle.STATE_DIR / "hybrid"
    work.mkdir(exist_ok=True)
    clients = state.clients(-(-procs // max(state.client_namespaces, 1)))
    try:
        measured = run(run_tools, plan, params, rounds, work, state.pvfs2tab, clients,
                       log=lambda line: typer.echo(f"lab: {line}", err=True))
    except LabError as e:
        _fail(str(e), 1)
    setup = {"servers": state.servers, "rate": state.rate, "client_namespaces": state.client_namespaces,
             "orangefs_version": state.orangefs_version, "commit": _commit(), "rounds": rounds,
             "params_from": params_from, "params": params.scalars()}
    doc = build_report(plan, measured, setup)
    report = _write_hybrid_report(doc, state, read_passes, report, results_md, params_from)
    typer.echo(f"lab: hybrid {doc['total']['hybrid']:.2f} s, default {doc['total']['default']:.2f} s, oracle "
               f"{doc['oracle']['total']:.2f} s: gain {doc['gain']:+.1%}, distance to the oracle "
               f"{doc['distance_to_oracle']:+.1%}, write with replicas {doc['sync_cost']['vs_default']:+.1%} vs "
               f"default; report {report}")


def _write_hybrid_report(doc: Mapping[str, Any], state: lifecycle.LabState, read_passes: int, report: Path | None,
                         results_md: Path, params_from: str) -> Path:
    """Write a ``lab hybrid`` run's JSON report (``report``, else its default path) and replace its section
    of ``results_md``; the report's path."""
    from pfslab.hybrid.report import results_markdown
    from pfslab.report import replace_marked

    # one report and one results.md section per workload and setup; the headline setup's sit at the top
    name = "lab-hybrid" if read_passes == 1 else f"lab-hybrid-reads-{read_passes}"
    where = REPO / "docs" / "results"
    if (state.servers, state.rate, state.client_namespaces) != (4, "200mbit", 1):
        setup_dir = f"{state.servers}s-{state.rate}-{state.client_namespaces}c"
        where = where / "setups" / setup_dir
        name += f" {setup_dir}"
    report = report or where / f"{name.split(' ')[0]}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(doc, indent=2) + "\n")
    up_command = (f"lab/lab up --servers {state.servers} --rate {state.rate} "
                  f"--client-namespaces {state.client_namespaces}")
    commands = [up_command, *([params_from] if params_from.startswith("lab/lab ") else []), _command("hybrid")]
    replace_marked(results_md, f"<!-- {name}: begin -->", f"<!-- {name}: end -->",
                   results_markdown(doc, "\n".join(commands)))
    return report


def _command(name: str) -> str:
    """This invocation as a command line (the arguments after the subcommand's name)."""
    args = sys.argv[sys.argv.index(name) + 1:] if name in sys.argv else []
    return " ".join(["lab/lab", name, *(shlex.quote(a) for a in args)])


def _replace_section(path: Path, setup_key: str, body: str) -> None:
    """Put ``body`` between this setup's markers in ``path`` (appended with them when absent): one section
    per lab setup, so runs on 4 and 8 servers, one or two client namespaces, stand side by side."""
    from pfslab.report import replace_marked

    replace_marked(path, f"<!-- lab-validate {setup_key}: begin -->", f"<!-- lab-validate {setup_key}: end -->",
                    body)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
