"""The fit of a run's measurements, its publication, and the CostCalibration status (pure).

Phases: `Pending` (waiting for the cluster), `Running` (hints and probe jobs), `Succeeded` (parameters
published), `Failed` (refused or a probe failed). One condition, `Ready`: True with reason `Fitted`;
False with `ClusterNotReady`, `Probing`, `Queued` (waiting for another calibration's probes:
probe_slot.py), `PoorFit` (R² below `fit.minRSquared`; the parameters are
still published), `NotIdentifiable`, `GridTooLarge`, `ProbeFailed` or `InvalidSpec`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pfslayout.calibration import PARAMS, FitResult, fit, merge_measurements, parse_probe
from pfslayout.k8s.conditions import Event, EventPolicy, condition, transition_events
from pfslayout.kinds.costcalibration.spec import CostCalibrationSpec

PHASES = ("Pending", "Running", "Fitting", "Succeeded", "Failed")
EVENT_POLICY = EventPolicy(troubled_phases=frozenset({"Failed"}),
                           warning_reasons=frozenset({"PoorFit", "NotIdentifiable", "GridTooLarge", "ProbeFailed",
                                                      "InvalidSpec", "ClusterNotReady"}))


def fit_run(spec: CostCalibrationSpec, docs: dict[str, str]) -> FitResult:
    """The core fit over every grid document, with each server's pinned documents when `fit.perServer`."""
    grid = [parse_probe(json.loads(text), key) for key, text in sorted(docs.items()) if key.startswith("j")]
    per_server: dict[int, list[Any]] = {}
    for key, text in sorted(docs.items()):
        if key.startswith("server-"):
            per_server.setdefault(int(key.split("-")[1]), []).append(parse_probe(json.loads(text), key))
    servers = {j: merge_measurements(parts) for j, parts in per_server.items()}
    return fit(merge_measurements(grid), variant=spec.fit.variant, weighting=spec.fit.weighting,
               per_server=servers or None)


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def params_block(result: FitResult) -> dict[str, Any]:
    doc = result.to_dict()
    out = {p: doc[p] for p in result.columns}  # the five, e_write/beta_write, e_shared, v_small_write when fitted
    if result.params.overlap:
        out["overlap"] = True
    if doc.get("servers"):
        out["servers"] = [{k: v for k, v in s.items() if v is not None} for s in doc["servers"]]
    return out


def client_nodes(index: dict[str, Any]) -> int | None:
    """How many distinct nodes the run's probe workers ran on, from the run's index (each collected job's
    `nodes`); None when no job recorded any (a run collected by an older operator)."""
    nodes = {n for entry in index.values() if isinstance(entry, dict) for n in entry.get("nodes") or []}
    return len(nodes) or None


def fit_block(result: FitResult, nodes: int | None = None) -> dict[str, Any]:
    """The status `fit` block; `nodes`: the client nodes the probes measured (client_nodes)."""
    cond = result.design.condition
    out: dict[str, Any] = {
        "rSquared": _finite(result.r2),
        "fitRSquared": _finite(result.fit_r2),
        "rmseSeconds": _finite(result.rmse),
        "maxRelativeError": _finite(result.max_relative_error),
        "medianRelativeError": _finite(result.median_relative_error),
        "cells": len(result.cells),
        "clientNodes": nodes,
        "rank": result.design.rank,
        "condition": cond if math.isfinite(cond) else -1,
        "identified": result.determined,
        "poorlyDetermined": list(result.poorly_determined) or None,
        "standardErrors": {p: v for p, v in result.stderr.items() if v is not None and math.isfinite(v)},
        "warnings": result.warnings[:32],
        # what `pfslayout calibrate` prints as "per operation" and "shared cores": a user seeing no
        # beta_write or e_shared learns whether the fit tried them and why they were not kept
        "writes": result.split_note[:1024] or None,
        "sharedCores": result.shared_note[:1024] or None,
        "overlap": result.overlap_note[:1024] or None,
        "smallWrites": result.small_note[:1024] or None,
    }
    return {k: v for k, v in out.items() if v is not None}


def verdict(spec: CostCalibrationSpec, result: FitResult) -> tuple[bool, str, str]:
    """(ready, reason, message) of a finished fit."""
    missing = [p for p in PARAMS if p not in result.design.identified]
    r2 = result.fit_r2
    what = "R² of log times" if result.weighting == "relative" else "R²"
    summary = (f"{what} {r2:.3f}" if r2 is not None else f"{what} undefined") + \
        f", median relative error {result.median_relative_error:.3g} over {len(result.cells)} cells"
    if missing:
        return False, "NotIdentifiable", (f"the measurements do not identify {', '.join(missing)} "
                                          f"({'; '.join(result.design.warnings())}); widen spec.grid")
    if r2 is None or r2 < spec.fit.min_r_squared:
        return False, "PoorFit", (f"{summary}, below spec.fit.minRSquared {spec.fit.min_r_squared}: the parameters "
                                  "are published but the model explains this platform poorly (see fit.warnings)")
    if poor := result.poorly_determined:
        return True, "Fitted", (f"fitted; {', '.join(poor)} poorly determined (standard error at least half the "
                                f"value: more repetitions would narrow it); {summary}")
    per_op = f" (writes: {result.split_note.removeprefix('writes have their own ')})" \
        if result.params.per_op else ""
    return True, "Fitted", f"all {len(result.columns)} parameters identified{per_op}; {summary}"


def params_json(result: FitResult, name: str, run: int, completion: str) -> str:
    doc = params_block(result) | {"calibration": {"name": name, "run": run, "completionTime": completion,
                                                  "rSquared": _finite(result.r2), "variant": result.variant}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def history_entry(run: int, generation: int, completion: str, reason: str, result: FitResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"run": run, "observedGeneration": generation, "completionTime": completion,
                             "reason": reason,
                             "params": {k: v for k, v in params_block(result).items() if k != "servers"}}
    if _finite(result.r2) is not None:
        entry["rSquared"] = _finite(result.r2)
    if _finite(result.fit_r2) is not None:
        entry["fitRSquared"] = _finite(result.fit_r2)
    if _finite(result.median_relative_error) is not None:
        entry["medianRelativeError"] = _finite(result.median_relative_error)
    return entry


def with_history(previous: list[dict[str, Any]], entry: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    kept = [h for h in previous if h.get("run") != entry["run"]]
    return [*kept, entry][-limit:]


def ready(ok: bool, reason: str, message: str, generation: int, now: str, previous: dict[str, Any] | None
          ) -> list[dict[str, Any]]:
    return [condition("Ready", ok, reason, message, generation, now, (previous or {}).get("conditions"))]


def progress(done: int, total: int) -> dict[str, Any]:
    return {"done": done, "total": total, "progress": f"{done}/{total}"}


def events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    cells = new.get("cells") or {}
    summary = f"run {new.get('run', 0)}, {cells.get('progress', '0/0')} cells"
    return transition_events(old, new, EVENT_POLICY, summary)
