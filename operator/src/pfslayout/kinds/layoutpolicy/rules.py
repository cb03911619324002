"""One LayoutPolicy rule → a decision, the directories it lays out and their hints (pure).

* `explicit`: the given layout (servers pinned with layout LIST when `servers` is set).
* `auto` with `source: workload`: the core planner costs every candidate for the described workload
  with the policy's parameters; restricted to `auto.candidates`; a close call becomes a replica set only
  with `allowHybrid`. Heterogeneous per-server parameters give `varstrip_dist` strips (the planner's
  `hints_for`).
* `auto` with `source: trace`: the layout the learning loop chose from the last traced run of a selected
  MPIJob (learn.py; hysteresis there), costed again with the current parameters; until a trace arrives
  the rule waits (reported, not applied).
* `hybrid`: the given replicas; the rule's directory holds the first replica's layout (the primary
  copy) and each replica lives in `<path>/.replica-<name>` with its own layout.

Every problem is a `RuleError` naming `spec.rules[i].<field>` and the fix; the other rules still apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pfslayout.costmodel.params import CostParams
from pfslayout.errors import InputError
from pfslayout.orangefs.dirhints import DirectoryHints
from pfslayout.planner import plan_workload
from pfslayout.planner.hints import (
    KEY_DIST,
    KEY_LAYOUT,
    KEY_LIST,
    KEY_NUM,
    KEY_PARAMS,
    LAYOUT_LIST,
    SLOT_PREFIX,
    hints_for,
    pinned_slots,
    server_list,
)
from pfslayout.planner.models import CandidateCost, Decision
from pfslayout.planner.policy import SHARING, workload_from_rule
from pfslayout.planner.summary import TraceSummary, plan_summary

RESERVED = "/.pfslayout"


class RuleError(Exception):
    def __init__(self, field: str, problem: str, fix: str) -> None:
        super().__init__(f"{field}: {problem}; {fix}")
        self.field = field


@dataclass(frozen=True)
class Platform:
    servers: int
    mount_path: str
    server_urls: tuple[str, ...]  # BMI address of each server, by ordinal


@dataclass
class RuleDecision:
    index: int
    path: str  # inside the file system, as in the spec
    mode: str
    dirs: list[DirectoryHints] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    pending: bool = False  # planned, nothing to apply yet (a `source: trace` rule before its first trace)

    @property
    def where(self) -> str:
        return f"spec.rules[{self.index}]"


def full_path(platform: Platform, path: str) -> str:
    return platform.mount_path.rstrip("/") + (path if path != "/" else "")


def _check_path(path: str, platform: Platform, where: str) -> None:
    mount = platform.mount_path.rstrip("/")
    if path == mount or path.startswith(mount + "/"):
        inside = path[len(mount):] or "/"
        raise RuleError(f"{where}.path", f"{path} is a client path (the cluster mounts the file system at "
                        f"{mount})", f"give the path inside the file system, {inside}")
    if path == RESERVED or path.startswith(RESERVED + "/"):
        raise RuleError(f"{where}.path", f"{path} is inside {RESERVED}, where the operator keeps calibration "
                        "probes and traces", "lay out a directory outside it")


def replica_dirs(target: str, name: str, xattrs: dict[str, str], platform: Platform,
                 sharing: str) -> tuple[list[DirectoryHints], int | None]:
    """A replica's directory, and — files per process, fewer datafiles than servers, not pinned by the
    rule already — its pinned slot directories (``planner.hints.pinned_slots``) with their count, which
    the shim's ``slots`` uses to put each file's copy in the slot its name gives."""
    where = f"{target}/.replica-{name}"
    dirs = [DirectoryHints(where, dict(xattrs))]
    if sharing != "file-per-process" or KEY_LAYOUT in xattrs or len(platform.server_urls) != platform.servers:
        return dirs, None
    slots = pinned_slots(xattrs, platform.server_urls)
    dirs += [DirectoryHints(f"{where}/{SLOT_PREFIX}{j}", x) for j, x in enumerate(slots)]
    return dirs, len(slots) or None


def explicit_hints(lay: dict[str, Any], platform: Platform, sharing: str, where: str) -> dict[str, str]:
    """The xattrs of an explicit layout (`layout`, `groups`, `stripSize`, `servers` of the CRD)."""
    n = platform.servers
    pins = list(lay.get("servers") or [])
    bad = [s for s in pins if s >= n]
    if bad:
        raise RuleError(f"{where}.servers", f"server ordinal {bad[0]} does not exist on this {n}-server cluster",
                        f"pin ordinals 0..{n - 1}")
    k = len(pins) or n
    strip = int(lay.get("stripSize") or 65536)
    layout, g = lay["layout"], lay.get("groups")
    if layout == "2-D":
        if not g or k % g or g >= k:
            raise RuleError(f"{where}.groups", f"groups {g} must divide the {k} servers the layout spans and be "
                            "smaller", f"use a divisor of {k} between 2 and {k - 1}" if k > 2 else
                            "2-D needs at least 4 servers; use 1-DH or 1-DV")
        dfiles = k // g if sharing == "file-per-process" else k
    elif layout == "1-DV":
        dfiles = 1 if sharing == "file-per-process" else k
    else:
        dfiles = k
    if dfiles > n:
        raise RuleError(f"{where}.layout", f"{dfiles} datafiles per file, more than the cluster's {n} servers",
                        "use fewer groups or servers")
    xattrs = {KEY_NUM: str(dfiles), KEY_DIST: "simple_stripe", KEY_PARAMS: f"strip_size:{strip}"}
    if pins:
        xattrs[KEY_LAYOUT] = LAYOUT_LIST
        xattrs[KEY_LIST] = server_list([platform.server_urls[s] for s in pins])
    return xattrs


def chosen(lay: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    out = {k: lay[k] for k in ("layout", "groups", "stripSize", "servers") if lay.get(k) is not None}
    if name:
        out["name"] = name
    return out


def candidate_status(c: CandidateCost) -> dict[str, Any]:
    out: dict[str, Any] = {"layout": c.layout, "predictedSeconds": c.total, "networkSeconds": c.network,
                           "storageSeconds": c.storage}
    if c.g is not None:
        out["groups"] = c.g
    return out


def _strip(xattrs: dict[str, str]) -> int | None:
    params = xattrs.get(KEY_PARAMS, "")
    return int(params.split(":", 1)[1]) if params.startswith("strip_size:") else None


def _learned(auto: dict[str, Any], d: RuleDecision, platform: Platform, params: CostParams, variant: str,
             delta: float, learned: Mapping[str, Any] | None) -> None:
    """`source: trace`: the layout the learning loop chose from the last traced run (learn.py keeps it,
    with hysteresis), costed again with the current parameters for the status."""
    entry = learned or {}
    if not entry.get("summary") or not entry.get("layout"):
        # the directory is created (without hints) so the first traced job can write there: ROMIO cannot
        # create directories, and the job's pods have no mount to do it with
        d.dirs.append(DirectoryHints(full_path(platform, d.path), {}))
        d.pending = True
        d.status.update(applied=False, source="trace", message=(
            "waiting for a traced run: an MPIJob matching spec.selector that succeeds with the shim's tracing "
            "(spec.trace.enabled) is collected and this rule planned from its own requests"))
        return
    summary = TraceSummary.model_validate(entry["summary"])
    decision = plan_summary(summary, platform.servers, params, variant, delta).decisions[0]
    allowed = set(auto.get("candidates") or ["1-DH", "1-DV", "2-D"])
    # cheapest first; a tie goes to the planner's choice, which already applied its tie rule (a layout
    # realised as another candidate loses to it: 1-DH of 16 KiB on 8 servers is 2-D:2 with more datafiles)
    cands = sorted((c for c in decision.candidates if c.layout in allowed),
                   key=lambda c: (c.total, c.label != decision.choice))
    lay = dict(entry["layout"])
    pick = next((c for c in cands if c.layout == lay.get("layout") and c.g == lay.get("groups")), None)
    if pick is None:
        raise RuleError(f"{d.where}.auto.candidates", f"the learned layout {lay.get('layout')} is not an allowed "
                        "candidate on this cluster", "allow it again, or wait for the next traced run")
    best = cands[0]
    hints = hints_for(pick.layout, pick.g, platform.servers, summary.sharing, summary.dominant_size, params,
                      summary.files)
    layout: dict[str, Any] = {"layout": pick.layout}
    if pick.g is not None:
        layout["groups"] = pick.g
    if hints.strip_size:
        layout["stripSize"] = hints.strip_size
    margin = (cands[1].total - best.total) / best.total if len(cands) > 1 and best.total > 0 else None
    d.dirs.append(DirectoryHints(full_path(platform, d.path), dict(hints.xattrs)))
    history = list(entry.get("history") or [])
    why = history[-1].get("reason") if history else f"{pick.label} chosen from the trace"
    d.status.update(decision="static", layout=layout, hints=dict(hints.xattrs), candidates=[
        candidate_status(c) for c in cands], margin=margin, source="trace",
        trace={"job": entry.get("job"), "collectedAt": entry.get("at"), "requests": summary.requests,
               "ranks": summary.ranks, "sharing": summary.sharing, "dominantSize": summary.dominant_size},
        history=history, message=f"from the trace of MPIJob {entry.get('job')} ({summary.requests} requests by "
                                 f"{summary.ranks} ranks, {summary.sharing}): {why}")


def _auto(rule: dict[str, Any], d: RuleDecision, platform: Platform, params: CostParams, variant: str,
          delta: float, learned: Mapping[str, Any] | None = None) -> None:
    auto = rule.get("auto") or {}
    if auto.get("source", "workload") == "trace":
        _learned(auto, d, platform, params, variant, delta, learned)
        return
    try:
        workload = workload_from_rule(rule, d.where)
        plan = plan_workload(workload, platform.servers, params, variant, delta)
    except InputError as err:
        raise RuleError(err.field, err.problem, err.fix or "fix the rule") from None
    decision: Decision = plan.decisions[0]
    allowed = set(auto.get("candidates") or ["1-DH", "1-DV", "2-D"])
    # cheapest first; a tie goes to the planner's choice, which already applied its tie rule (a layout
    # realised as another candidate loses to it: 1-DH of 16 KiB on 8 servers is 2-D:2 with more datafiles)
    cands = sorted((c for c in decision.candidates if c.layout in allowed),
                   key=lambda c: (c.total, c.label != decision.choice))
    if not cands:
        raise RuleError(f"{d.where}.auto.candidates", "no allowed candidate can be realised on this cluster",
                        "allow 1-DH or 1-DV")
    best = cands[0]
    margin = (cands[1].total - best.total) / best.total if len(cands) > 1 and best.total > 0 else None
    sharing = SHARING[rule.get("fileSharing", "perProcess")]
    target = full_path(platform, d.path)
    d.status.update(candidates=[candidate_status(c) for c in cands], margin=margin, source="workload")
    if auto.get("allowHybrid") and decision.mode == "hybrid" and decision.hybrid is not None \
            and all(r.hints.xattrs for r in decision.hybrid.replicas):
        reps = decision.hybrid.replicas
        d.dirs.append(DirectoryHints(target, dict(reps[0].hints.xattrs)))
        replicas = []
        for r in reps:
            name = r.suffix.lstrip(".")
            dirs, slots = replica_dirs(target, name, dict(r.hints.xattrs), platform, sharing)
            d.dirs += dirs
            replicas.append({"layout": r.label.split("(")[0], "name": name,
                             **({"stripSize": s} if (s := _strip(r.hints.xattrs)) else {}),
                             **({"slots": slots} if slots else {})})
        d.status.update(decision="hybrid", replicas=replicas, hints=dict(reps[0].hints.xattrs),
                        message=f"{decision.explanation}; hybrid: {decision.hybrid.reason}")
        return
    hints = hints_for(best.layout, best.g, platform.servers, sharing, decision.dominant_size, params)
    layout: dict[str, Any] = {"layout": best.layout}
    if best.g is not None:
        layout["groups"] = best.g
    if hints.strip_size:
        layout["stripSize"] = hints.strip_size
    d.dirs.append(DirectoryHints(target, dict(hints.xattrs)))
    why = decision.explanation if best.label == decision.choice else (
        f"{best.label} is the cheapest of the allowed candidates {sorted(allowed)}")
    d.status.update(decision="static", layout=layout, hints=dict(hints.xattrs), message=why)


def decide_rule(rule: dict[str, Any], index: int, platform: Platform, params: CostParams, variant: str,
                delta: float, learned: Mapping[str, Any] | None = None) -> RuleDecision:
    """`learned`: what the learning loop keeps for this rule's path (an `auto` rule with `source: trace`)."""
    path = str(rule.get("path") or "")
    d = RuleDecision(index, path, str(rule.get("mode")))
    d.status = {"path": path, "mode": d.mode, **({"source": "spec"} if d.mode != "auto" else {})}
    try:
        _check_path(path, platform, d.where)
        sharing = SHARING[rule.get("fileSharing", "perProcess")]
        target = full_path(platform, path)
        if d.mode == "explicit":
            lay = rule.get("explicit") or {}
            xattrs = explicit_hints(lay, platform, sharing, f"{d.where}.explicit")
            d.dirs.append(DirectoryHints(target, xattrs))
            d.status.update(decision="static", layout=chosen(lay), hints=xattrs,
                            message=f"explicit layout {lay['layout']}" + (f" g={lay['groups']}" if lay.get("groups")
                                                                          else ""))
        elif d.mode == "hybrid":
            replicas = (rule.get("hybrid") or {}).get("replicas") or []
            sets = [explicit_hints(r, platform, sharing, f"{d.where}.hybrid.replicas[{j}]")
                    for j, r in enumerate(replicas)]
            d.dirs.append(DirectoryHints(target, sets[0]))
            applied = []
            for r, x in zip(replicas, sets):
                dirs, slots = replica_dirs(target, r["name"], x, platform, sharing)
                d.dirs += dirs
                applied.append(chosen(r, r["name"]) | ({"slots": slots} if slots else {}))
            d.status.update(decision="hybrid", replicas=applied, hints=sets[0],
                            message=f"replica set of {len(replicas)}: {', '.join(r['name'] for r in replicas)}; "
                                    f"{path} holds {replicas[0]['name']}'s layout, each copy in .replica-<name>")
        else:
            _auto(rule, d, platform, params, variant, delta, learned)
    except RuleError as err:
        d.error = str(err)
        d.dirs = []
        d.status.update(applied=False, message=str(err))
    return d


def summary(rules: list[dict[str, Any]]) -> str:
    parts = []
    for r in rules:
        if r.get("decision") == "hybrid":
            what = "hybrid(" + "+".join(x["layout"] + (f"/g{x['groups']}" if x.get("groups") else "")
                                        for x in r.get("replicas") or []) + ")"
        elif r.get("layout"):
            lay = r["layout"]
            what = lay["layout"] + (f"/g{lay['groups']}" if lay.get("groups") else "")
        else:
            what = "-"
        parts.append(f"{r['path']}={what}{' ✓' if r.get('applied') else ''}")
    return ", ".join(parts)
