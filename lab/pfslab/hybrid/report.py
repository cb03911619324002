"""Reporting a ``lab hybrid`` run: the JSON report (the plan, what was measured and the scores) and its
docs/results.md section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from pfslab.hybrid.measure import Measured
from pfslab.hybrid.plan import DEFAULT, HYBRID, SHARING, Plan, phase_kind
from pfslab.hybrid.scoring import score
from pfslab.report import section_head
from pfslab.score import human_size


def build_report(plan: Plan, measured: Measured, setup: Mapping[str, Any]) -> dict[str, Any]:
    """The run's JSON report: its setup, the workload, the layouts as given, the model's picks, what was
    measured (times, routing, the rank files' layouts and placement) and the scores."""
    scores = score(measured.times, plan.phases, procs=plan.procs, block=plan.block, replicas=len(plan.replicas))
    return {
        "setup": dict(setup),
        "workload": {"sharing": SHARING, "procs": plan.procs, "block_per_rank": plan.block,
                     "common_request_size": plan.s_common,
                     "phases": [{**asdict(p), "requests_per_rank": plan.requests(p)} for p in plan.phases]},
        "layouts": {**{s.key: {**asdict(s), "romio_hints": s.romio_hints()} for s in plan.layouts},
                    DEFAULT: {"description": "no hints: the file system's default distribution (simple_stripe, "
                                             "64 KiB strip, a datafile on every server)"}},
        "pinned": bool(plan.addresses),
        "realised": measured.realised,
        "placement": measured.placement,
        "replicas": list(plan.replicas),
        "model_picks": plan.picks,
        "model_static_pick": plan.static_pick,
        "routing": measured.routing,
        **scores,
    }


def results_markdown(doc: Mapping[str, Any], command: str) -> str:
    """The run's docs/results.md section: the workload, every variant's phase medians beside the per-phase
    oracle, the scores, and — when the report has them — where OrangeFS put the files, the break-even, the
    model's single static pick and the shim's routing."""
    work = doc["workload"]
    passes = sum(1 for p in work["phases"] if p["op"] == "read") // 2
    # one column per kind of phase, its passes summed: 33 columns would not read
    kinds: dict[str, list[str]] = {}
    for n in (p["name"] for p in work["phases"]):
        kinds.setdefault(phase_kind(n) if passes > 1 else n, []).append(n)
    lines = [*_workload(doc, command, passes, kinds), "", *_table(doc, passes, kinds), "", *_scores(doc),
             *_placement(doc), *_break_even(doc), *_static_pick(doc), *_routing(doc, passes)]
    return "\n".join(lines) + "\n"


def _workload(doc: Mapping[str, Any], command: str, passes: int, kinds: Mapping[str, list[str]]) -> list[str]:
    """The section's head and its workload paragraph: phases, layouts, pinning, replicas."""
    work = doc["workload"]
    described = {phase_kind(p["name"]) if passes > 1 else p["name"]: p for p in work["phases"]}
    phases = ", ".join(
        f"{k} ({p['op']}, {p['pattern']}, {human_size(p['transfer'])} × {p['requests_per_rank']}"
        + (f", × {len(kinds[k])} passes" if len(kinds[k]) > 1 else "") + ")"
        for k, p in described.items())
    pinning = ("Layouts of fewer datafiles than servers pinned: rank k's file in slot k mod (servers / datafiles), "
               "a directory with layout LIST over that slot's servers (`pinned_slots`; replicas through the shim's "
               "`slots`). " if doc.get("pinned", False) else
               "Not pinned: OrangeFS places each file of a layout of fewer datafiles than servers at random. ")
    picks = ", ".join(f"{k} → {v}" for k, v in {phase_kind(a) if passes > 1 else a: b
                                                 for a, b in doc["model_picks"].items()}.items())
    times = f"{passes} times" if passes > 1 else "once"
    return [
        *section_head("Hybrid replicas on a mixed workload:" if passes == 1 else
                      f"Hybrid replicas on a mixed workload read back {passes} times:", command, doc["setup"]),
        f"Workload: {work['procs']} ranks, a file per rank of {human_size(work['block_per_rank'])} written once, "
        f"then read back {times}, each pass small random then large sequential reads: {phases}. Layouts realised "
        f"by `hints_for` for the most common request size ({human_size(work['common_request_size'])}); default = "
        f"no hints (64 KiB strip over every server). {pinning}Replicas: {', '.join(doc['replicas'])} (the model's "
        f"picks: {picks}).",
    ]


def _table(doc: Mapping[str, Any], passes: int, kinds: Mapping[str, list[str]]) -> list[str]:
    """A row per variant and one for the oracle, a column per kind of phase (its passes summed)."""
    lines = [
        ("Each cell: the phase's median over the rounds (± spread)" if passes == 1 else
         "Each cell: the sum over the passes of each phase's median over the rounds (± the largest spread "
         "among them)") + "; the oracle takes the fastest static layout of every phase.",
        "",
        "| variant | " + " | ".join(kinds) + " | total |",
        "|---|" + "---|" * (len(kinds) + 1),
    ]
    for v in doc["variants"]:
        cells = [f"{sum(doc['median'][v][n] for n in ns):.3f} s (±{max(doc['spread'][v][n] for n in ns):.0%})"
                 for ns in kinds.values()]
        name = f"**{v}**" if v == HYBRID else v
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {doc['total'][v]:.3f} s |")
    o = doc["oracle"]
    lines.append("| per-phase oracle | " + " | ".join(
        f"{sum(o['per_phase'][n] for n in ns):.3f} s ({'/'.join(dict.fromkeys(o['layout'][n] for n in ns))})"
        for ns in kinds.values()) + f" | {o['total']:.3f} s |")
    return lines


def _scores(doc: Mapping[str, Any]) -> list[str]:
    """The headline scores against the goals: gain, distance to the oracle, the reads alone, sync cost."""
    sc = doc["sync_cost"]
    reads = doc.get("reads") or {}
    goals = doc["goals"]
    sp = doc.get("speedup")
    phases = ([f"* Phase by phase against the default layout: {sp['geomean']:.2f}× (geometric mean over "
               f"{len(sp['per_phase'])} phases"
               + (f", {sp['geomean_decisive']:.2f}× on the {sp['decisive']} decisive ones"
                  if sp.get("geomean_decisive") is not None else "")
               + f"); worst phase {sp['worst_phase']} {sp['worst']:.2f}×."] if sp else [])
    return [
        f"* **Gain over the default layout: {_pct(doc['gain'])}** (goal ≥ {goals['gain_at_least']:.0%}: "
        f"{'met' if goals['gain_met'] else 'not met'}); over the best static layout ({doc['best_static']['layout']}): "
        f"{_pct(doc['gain_over_best_static'])}.",
        f"* **Distance to the per-phase oracle: {_pct(doc['distance_to_oracle'])}** (goal ≤ "
        f"{goals['distance_at_most']:.0%}: {'met' if goals['distance_met'] else 'not met'}).",
        f"* Read phases alone: gain {_pct(reads.get('gain'))}, distance to their oracle "
        f"{_pct(reads.get('distance_to_oracle'))}.",
        f"* **Sync cost of the replicas** ({sc['replicas']} copies): the {sc['phase']} phase took "
        f"{sc['hybrid']:.3f} s with them against {sc['default']:.3f} s on the default layout "
        f"({_pct(sc['vs_default'])}) and {sc['fastest_static']['time']:.3f} s on the fastest static layout "
        f"({sc['fastest_static']['layout']}, {_pct(sc['vs_fastest_static'])}); "
        f"{human_size(sc['bytes_written']['hybrid'])} written instead of {human_size(sc['bytes_written']['static'])}.",
        *phases,
    ]


def _placement(doc: Mapping[str, Any]) -> list[str]:
    """Where the files of the layouts with fewer datafiles than servers went, round by round (none: no lines)."""
    partial = [k for k, v in doc.get("realised", {}).items()
               if v.get("datafiles") and v["datafiles"] < doc["setup"].get("servers", 0)]
    if not partial:
        return []

    def where(files: list[list[str]]) -> str:
        return "/".join("+".join(a.rsplit(".", 1)[-1] for a in f) for f in files)

    how = ("placed by the shim (static: spread; replicas: slots)" if doc.get("pinned", False)
           else "the planner's hints do not pin them")
    return ["", "Where OrangeFS put the rank files of the layouts with fewer datafiles than servers, round by "
            f"round (last address byte of each file's datafiles; {how}): "
            + "; ".join(f"{k}: " + ", ".join(where(r) for r in doc.get("placement", {}).get(k)
                                              or [doc["realised"][k]["servers"]])
                        for k in partial) + "."]


def _break_even(doc: Mapping[str, Any]) -> list[str]:
    """How many read passes per write each goal needs (no break-even in the report: no lines)."""
    be = doc.get("break_even") or {}
    if not be.get("per_pass"):
        return []

    def needed(n: int | None) -> str:
        return "never (each pass loses ground)" if n is None else f"{n}"

    return ["", f"* **Break-even, extrapolated** from this run's medians (a write, then passes of "
            f"{be['per_pass']['hybrid']:.3f} s on the hybrid against {be['per_pass']['oracle']:.3f} s for the "
            f"oracle and {be['per_pass']['default']:.3f} s on the default): the gain goal needs "
            f"{needed(be['passes_for_gain'])} read pass(es) per write, the distance goal "
            f"{needed(be['passes_for_distance'])}; this run had {be['passes']}."]


def _static_pick(doc: Mapping[str, Any]) -> list[str]:
    """What the model's one layout for the whole workload measured (not among the variants: no lines)."""
    static = doc.get("model_static_pick")
    if static not in doc["total"]:
        return []
    return ["", f"The model's single static layout for the whole workload would be {static}: "
            f"{doc['total'][static]:.3f} s measured, a gain over the default of "
            f"{_pct(doc['total'][DEFAULT] / doc['total'][static] - 1)}."]


def _routing(doc: Mapping[str, Any], passes: int) -> list[str]:
    """The shim's routing counters per phase, or per kind of phase over the passes (none: no lines)."""
    if not doc.get("routing"):
        return []
    lines = ["", "Routing (the shim's counters, last round, all ranks"
             + (", summed over the passes" if passes > 1 else "") + "):", ""]
    for name, r in _routing_by_kind(doc["routing"], passes > 1).items():
        reps = "; ".join(f"{x['layout']}: {x['reads']} reads, {x['writes']} direct writes" for x in r["replicas"])
        along = (f", {r['alongside_writes']} written to every copy at once "
                 f"({human_size(r['alongside_bytes'])} to the others)") if r.get("alongside_writes") else ""
        lines.append(f"* {name}: {reps}; {r['deferred_updates']} updates replayed to other copies"
                     f" ({human_size(r['deferred_bytes'])}){along}")
    return lines


def _routing_by_kind(routing: Mapping[str, Any], by_kind: bool) -> dict[str, Any]:
    """The routing counters per phase, or summed per kind of phase over the passes."""
    if not by_kind:
        return dict(routing)
    out: dict[str, Any] = {}
    for name, r in routing.items():
        into = out.setdefault(phase_kind(name), {k: 0 for k in r if k != "replicas"} | {
            "replicas": [{**x, **dict.fromkeys(("reads", "read_bytes", "writes", "write_bytes"), 0)}
                         for x in r["replicas"]]})
        for k, v in r.items():
            if k != "replicas":
                into[k] += v
        for mine, theirs in zip(into["replicas"], r["replicas"]):
            for k in ("reads", "read_bytes", "writes", "write_bytes"):
                mine[k] += theirs[k]
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"
