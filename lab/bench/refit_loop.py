"""Refit a product-loop report offline: fit model forms on its calibration cells, score them on its held-out
cells (issue 33 item 2's search for the cost the model misses). Prints, per report and form, the decisive
cells picked right, the share within 3% of the best, the worst regret and the misses.

    python lab/bench/refit_loop.py docs/results/loop-runs/*.json

Needs reports written by `lab/bench/product_loop.py` since they keep `calibration.cells` (loop-cal's
measured cells). The forms:

* ``operator`` — what the operator publishes: `pfslayout.calibration.fit` (the five terms, per-operation
  and shared-core terms where the fit keeps them, summed or overlapped as the fit chooses — the overlapped
  form, docs/cost-model.md "Overlapped network and storage", came out of this search), costed by the model;
* ``floor`` — a round takes at least c·p·nt (every message of all ranks on shared cores), max(model, floor);
* ``overlap`` — messages overlap the transfers: max(T_e, T_x + T_s + T_rw);
* ``small-writes`` — the overlapped form (e_write split) with the column of ``v_small_write`` always in (the
  bytes every rank writes in requests whose pieces fall below OrangeFS's small-I/O limit on two servers or
  more; docs/cost-model.md "Small writes"), fitted jointly: what the operator's fit does where it keeps the
  term. This search found the term; the operator has it since.

``--add-cells FILE --add-sizes 24K`` adds another run's measured cells of those sizes (`small_writes.py
--json`) to the calibration cells of every report with the same server count: a size no profile probes yet.

``floor`` and ``overlap`` are not in the model: each is fitted by alternating non-negative least squares (relative
error) over a grid of its nonlinear constant. A form enters the model only when it meets the goals out of
sample on every setup, not on one.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import nnls

from pfslab.score import Config, LabCell, best, decisive, fastest, realised_keys, regret, score
from pfslayout.calibration import fit
from pfslayout.calibration.design import CellConfig, columns, design_matrix, model_times, network_columns, overlapped
from pfslayout.calibration.measurements import Cell, Measurements
from pfslayout.planner.classify import servers_touched
from pfslayout.planner.hints import hints_for
from pfslayout.units import parse_sizes

Predict = Callable[[np.ndarray, list[CellConfig]], np.ndarray]  # (design of the cells, the cells) → seconds


def cells_of(rows: list[dict[str, Any]]) -> list[Cell]:
    return [Cell(layout=c["layout"], g=c["g"], op=c["op"], pattern=c["pattern"], p=c["p"], m=c["m"],
                 request_size=c["request_size"], requests_per_rank=c["requests_per_rank"], time=c["time"],
                 times=tuple(c["times"]), sharing=c["sharing"]) for c in rows]


def calibration_cells(report: dict[str, Any]) -> list[Cell]:
    return cells_of(report["calibration"]["cells"])


def pieces(layout: str, g: int | None, servers: int, size: int) -> tuple[int, int]:
    """(servers a request touches, bytes of its largest piece) as the planner's hints realise the layout for
    requests of ``size`` at aligned offsets (the probe's and the operator's directories' rule)."""
    h = hints_for(layout, g, servers, "file-per-process", size)
    k = servers_touched(servers, h.strip_size, h.num_dfiles, 0, size)
    return k, min(size, h.strip_size) if h.strip_size else size


def fit_small_writes(cal: list[Cell], servers: int) -> tuple[Predict, str]:
    """The overlapped form with e_write and the column of v_small_write, fitted jointly by the operator's
    alternating NNLS (relative error, columns scaled), the column kept whatever its value."""
    split = ("e",)
    net = network_columns(columns(split, small=True))

    def design(cells: list[CellConfig]) -> np.ndarray:
        return design_matrix(cells, servers, split=split, small=True)
    A, y = design(list(cal)), np.array([c.time for c in cal])
    Aw = A / y[:, None]
    scale = np.linalg.norm(Aw, axis=0)
    scale[scale == 0] = 1.0
    fit_module = importlib.import_module("pfslayout.calibration.fit")  # the package's `fit` is the function
    x, _ = fit_module._fit_overlapped(Aw / scale, np.ones(len(y)), net)
    x = x / scale
    return (lambda a, cells: overlapped(design(cells), x, net)), f"{x[-1]:.3g} s per small-write byte"


def heldout_cells(report: dict[str, Any]) -> list[LabCell]:
    """The held-out configurations as ``lab validate`` scores them: each row's repetitions and medians."""
    return [LabCell.build(Config(r["op"], r["pattern"], r["sharing"], r["p"], r["m"], r["request_size"],
                                 r["requests_per_rank"]), r["times"], r["median"]) for r in report["per_cell"]]


def layouts_of(cell: LabCell) -> list[CellConfig]:
    """What the model costs for ``cell``: the configuration under each measured layout, in ``layouts`` order."""
    return [cell.cell_like(k) for k in cell.layouts]


def nnls_rel(A: np.ndarray, y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Non-negative least squares of relative error over ``rows``, columns scaled (as calibration.fit)."""
    Aw = (A / y[:, None])[rows]
    scale = np.linalg.norm(Aw, axis=0)
    scale[scale == 0] = 1.0
    x, _ = nnls(Aw / scale, np.ones(int(rows.sum())), maxiter=50 * A.shape[1])
    return np.asarray(x / scale)


def fit_max(A: np.ndarray, y: np.ndarray, other: Callable[[np.ndarray, float], np.ndarray],
            rest: list[int]) -> tuple[float, np.ndarray]:
    """max(A[:, rest] @ x, other(c)) by alternating fits over a log grid of c; the best in relative error."""
    best: tuple[float, float, np.ndarray] | None = None
    everything = np.ones(len(y), dtype=bool)
    for c in np.geomspace(1e-6, 1e-3, 121):
        x = nnls_rel(A[:, rest], y, everything)
        for _ in range(8):
            linear = A[:, rest] @ x
            rows = linear >= other(A, c)
            if rows.sum() <= len(rest):
                break
            x = nnls_rel(A[:, rest], y, rows)
        err = float(np.sum((np.maximum(A[:, rest] @ x, other(A, c)) / y - 1) ** 2))
        if best is None or err < best[0]:
            best = (err, float(c), x)
    assert best is not None
    return best[1], best[2]


def forms(cal: list[Cell], servers: int) -> dict[str, tuple[Predict, str]]:
    y = np.array([c.time for c in cal])
    A = design_matrix(cal, servers, shared=True)  # e, v, α_seq, α_rand, β, then p·nt messages
    five = [0, 1, 2, 3, 4]
    c_floor, x_floor = fit_max(A, y, lambda a, c: c * a[:, 5], five)
    e_over, x_over = fit_max(A, y, lambda a, c: c * a[:, 0], [1, 2, 3, 4])
    result = fit(Measurements(servers=servers, cells=cal, source_format="probe"))
    params = result.params
    return {
        "operator": (lambda a, cells: model_times(cells, servers, params), f"R² {result.r2:.3f}, "
                     + ", ".join(f"{k} {v:.3g}" for k, v in params.scalars().items())
                     + (", overlapped" if params.overlap else ", summed")),
        "floor": (lambda a, cells: np.maximum(a[:, five] @ x_floor, c_floor * a[:, 5]),
                  f"c {c_floor:.3g} s per message of a round"),
        "overlap": (lambda a, cells: np.maximum(e_over * a[:, 0], a[:, [1, 2, 3, 4]] @ x_over),
                    f"e {e_over:.3g} s"),
        "small-writes": fit_small_writes(cal, servers),
    }


def score_form(cells: list[LabCell], predict: Predict, servers: int) -> str:
    """pfslab.score's verdict on the form's picks, and each decisive miss."""
    picks = []
    for cell in cells:
        configs = layouts_of(cell)
        predicted = predict(design_matrix(configs, servers, shared=True), configs)
        # the planner's tie rule, as the operator's `auto` rules and pfslab.score.model_pick apply it
        picks.append(fastest(dict(zip(cell.layouts, (float(t) for t in predicted))), realised_keys(cell, servers)))
    got = score(cells, picks)
    line = (f"{got.correct_decisive}/{got.decisive} decisive right, {got.within_3pct:.0%} within 3%, "
            f"worst regret {got.worst_regret:.0%}")
    return line + "".join(f"\n      miss {c.op} {c.pattern} p={c.p} {c.request_size // 1024} KiB: {best(c)} best, "
                          f"{pick} picked (+{regret(c, pick):.0%})"
                          for c, pick in zip(cells, picks) if decisive(c) and pick != best(c))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--add-cells", type=Path, help="another run's measured cells (small_writes.py --json)")
    ap.add_argument("--add-sizes", default="", help="the request sizes of --add-cells to add, e.g. 24K")
    args = ap.parse_args()
    extra: dict[str, Any] = json.loads(args.add_cells.read_text()) if args.add_cells else {"servers": 0, "cells": []}
    added = cells_of(extra["cells"])
    sizes = set(parse_sizes(args.add_sizes, "--add-sizes")) if args.add_sizes else {c.request_size for c in added}
    added = [c for c in added if c.request_size in sizes]
    for path in args.reports:
        report = json.loads(path.read_text())
        if not report.get("calibration", {}).get("cells"):
            raise SystemExit(f"refit-loop: {path} has no calibration.cells (written before they were kept)")
        servers = int(report["setup"]["servers"])
        cal = calibration_cells(report) + (added if servers == extra["servers"] else [])
        held = heldout_cells(report)
        print(f"{path} ({servers} servers, {report['setup']['rate']}; {len(cal)} calibration cells)")
        for name, (predict, about) in forms(cal, servers).items():
            print(f"  {name:8} {about}\n    {score_form(held, predict, servers)}")


if __name__ == "__main__":
    main()
