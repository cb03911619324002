"""``lab hybrid`` (issue 13): the pure parts — the phase plan, the layouts as the planner realises them,
the replica choice, the scores (per-phase oracle, gain, distance, sync cost) — with hand-computed
expectations. The real run is lab/tests/test_lab_hybrid_smoke.py."""

from __future__ import annotations

import json

import pytest

from pfslab.hybrid.measure import Measured
from pfslab.hybrid.paths import ior_target, rank_file
from pfslab.hybrid.plan import Phase, common_size, default_phases, make_plan, phase_kind, static_layouts
from pfslab.hybrid.report import build_report, results_markdown
from pfslab.hybrid.scoring import passes_needed, score
from pfslab.hybrid.shim import routing, shim_config
from pfslayout.costmodel import CostParams

PREFIX = "pfslabv"  # a lab of its own: not the developer's (pfslab) nor the smoke run's (pfslabt)

PHASES = default_phases(16 << 10, 4 << 20)
W, SMALL, LARGE = (p.name for p in PHASES)


def _times() -> dict[str, dict[str, list[float]]]:
    # medians by hand: 1-DH 1.0/4.0/2.0 → 7.0; 1-DV 3.0/1.0/6.0 → 10.0; default 1.5/3.0/2.5 → 7.0;
    # hybrid 2.5/1.2/2.1 → 5.8
    return {
        "1-DH": {W: [1.0, 0.9, 1.2], SMALL: [4.0, 4.4, 3.9], LARGE: [2.0, 2.0, 2.0]},
        "1-DV": {W: [3.0, 3.3, 2.7], SMALL: [1.0, 1.1, 0.9], LARGE: [6.0, 6.0, 5.0]},
        "default": {W: [1.5, 1.5, 1.5], SMALL: [3.0, 2.0, 3.5], LARGE: [2.5, 2.4, 2.6]},
        "hybrid": {W: [2.5, 2.0, 3.0], SMALL: [1.2, 1.2, 1.3], LARGE: [2.1, 2.0, 2.2]},
    }


def test_scores_by_hand() -> None:
    s = score(_times(), PHASES, procs=3, block=32 << 20, replicas=2)
    assert s["median"]["1-DH"] == {W: 1.0, SMALL: 4.0, LARGE: 2.0}
    assert s["total"] == pytest.approx({"1-DH": 7.0, "1-DV": 10.0, "default": 7.0, "hybrid": 5.8})
    # oracle: write 1.0 (1-DH), small 1.0 (1-DV), large 2.0 (1-DH) = 4.0; default is a candidate
    assert s["oracle"]["layout"] == {W: "1-DH", SMALL: "1-DV", LARGE: "1-DH"}
    assert s["oracle"]["total"] == pytest.approx(4.0)
    assert s["gain"] == pytest.approx(7.0 / 5.8 - 1)
    assert s["distance_to_oracle"] == pytest.approx(5.8 / 4.0 - 1)
    # 1-DH and default tie at 7.0: the tie goes to the planner's layout (1-DH before default)
    assert s["best_static"] == {"layout": "1-DH", "total": pytest.approx(7.0)}
    assert s["reads"]["gain"] == pytest.approx(5.5 / 3.3 - 1)
    assert s["reads"]["distance_to_oracle"] == pytest.approx(3.3 / 3.0 - 1)
    sync = s["sync_cost"]
    assert sync["hybrid"] == 2.5 and sync["default"] == 1.5
    assert sync["vs_default"] == pytest.approx(2.5 / 1.5 - 1)
    assert sync["fastest_static"] == {"layout": "1-DH", "time": 1.0}
    assert sync["vs_fastest_static"] == pytest.approx(1.5)
    assert sync["bytes_written"] == {"hybrid": 2 * 3 * (32 << 20), "static": 3 * (32 << 20)}
    assert s["goals"]["gain_met"] is True  # 7 / 5.8 − 1 = +20.7% ≥ 20%
    assert s["goals"]["distance_met"] is False  # +45% > 5%
    assert s["spread"]["1-DV"][W] == pytest.approx((3.3 - 2.7) / 3.0)
    assert s["variants"] == ["1-DH", "1-DV", "default", "hybrid"]
    # phase by phase, default / hybrid: 1.5/2.5 = 0.6, 3.0/1.2 = 2.5, 2.5/2.1; decisive among the model's
    # layouts (1-DH, 1-DV; the default is the baseline): all three phases (1.0 vs 3.0, 1.0 vs 4.0, 2.0 vs 6.0)
    sp = s["speedup"]
    assert sp["per_phase"] == pytest.approx({W: 0.6, SMALL: 2.5, LARGE: 2.5 / 2.1})
    assert sp["geomean"] == pytest.approx((0.6 * 2.5 * 2.5 / 2.1) ** (1 / 3))
    assert sp["decisive"] == 3 and sp["geomean_decisive"] == pytest.approx(sp["geomean"])
    assert sp["worst_phase"] == W and sp["worst"] == pytest.approx(0.6)


def test_break_even_extrapolates_the_read_passes_each_goal_needs() -> None:
    # a + N·ra ≥ f·(b + N·rb): N ≥ (f·b − a) / (ra − f·rb)
    assert passes_needed(0.0, 3.5, 4.0, 3.0, 1.0) == 8
    assert passes_needed(1.0, 4.0, 2.0, 3.0, 1.0) == 1
    assert passes_needed(5.0, 1.0, 1.0, 1.0, 1.0) == 1  # already there without reading
    assert passes_needed(0.0, 1.0, 1.0, 2.0, 1.0) is None  # every pass loses ground
    be = score(_times(), PHASES, procs=3, block=32 << 20, replicas=2)["break_even"]
    # hybrid: write 2.5, a pass 1.2 + 2.1; default: 1.5, 3.0 + 2.5; oracle: 1.0, 1.0 + 2.0
    assert be["passes"] == 1
    assert be["per_pass"] == pytest.approx({"hybrid": 3.3, "default": 5.5, "oracle": 3.0})
    # gain: 1.5 + 5.5 N ≥ 1.2 (2.5 + 3.3 N) from N = 1; distance: 1.05 (1 + 3 N) ≥ 2.5 + 3.3 N never
    assert (be["passes_for_gain"], be["passes_for_distance"]) == (1, None)
    two = default_phases(16 << 10, 4 << 20, passes=2)
    names = [p.name for p in two]
    times = {v: {n: [1.0] for n in names} for v in ("1-DH", "default", "hybrid")}
    times["hybrid"]["write"] = [3.0]
    assert score(times, two, procs=1, block=4 << 20, replicas=2)["break_even"]["passes"] == 2


def test_several_read_passes_read_as_one_column_per_kind_of_phase() -> None:
    two = default_phases(16 << 10, 4 << 20, passes=2)
    names = [p.name for p in two]
    assert [phase_kind(n) for n in names] == ["write"] + ["small-random-read", "large-sequential-read"] * 2
    times = {v: {n: [1.0, 1.0] for n in names} for v in ("1-DH", "1-DV", "default", "hybrid")}
    times["1-DV"]["small-random-read-2"] = [0.5, 0.5]
    times["hybrid"]["write"] = [2.0, 2.0]
    doc = score(times, two, procs=1, block=4 << 20, replicas=2) | {
        "setup": {"servers": 4, "rate": "200mbit", "client_namespaces": 1},
        "workload": {"procs": 1, "block_per_rank": 4 << 20, "common_request_size": 16 << 10,
                     "phases": [{"name": p.name, "op": p.op, "pattern": p.pattern, "transfer": p.transfer,
                                 "requests_per_rank": (4 << 20) // p.transfer} for p in two]},
        "replicas": ["1-DV", "1-DH"], "model_picks": dict.fromkeys(names[1:], "1-DV"), "pinned": True}
    md = results_markdown(doc, "lab/lab hybrid --read-passes 2")
    assert "| variant | write | small-random-read | large-sequential-read | total |" in md
    assert "read back 2 times" in md and "16 KiB × 256, × 2 passes" in md
    # the oracle's small reads: 1.0 (pass 1, 1-DH first in order) + 0.5 (pass 2, 1-DV) — both layouts named
    assert "| per-phase oracle | 1.000 s (1-DH) | 1.500 s (1-DH/1-DV) | 2.000 s (1-DH) | 4.500 s |" in md


def test_oracle_can_be_the_default_and_ties_prefer_planner_layouts() -> None:
    t = _times()
    t["default"][SMALL] = [0.5, 0.5, 0.5]
    t["1-DH"][LARGE] = [2.5, 2.5, 2.5]  # ties the default's 2.5: 1-DH is named
    s = score(t, PHASES, procs=1, block=4 << 20, replicas=2)
    assert s["oracle"]["layout"] == {W: "1-DH", SMALL: "default", LARGE: "1-DH"}
    assert s["oracle"]["total"] == pytest.approx(1.0 + 0.5 + 2.5)


def test_score_refuses_missing_variants_and_phases() -> None:
    t = _times()
    del t["default"]
    with pytest.raises(ValueError, match="'default'"):
        score(t, PHASES, procs=1, block=1, replicas=1)
    t = _times()
    t["1-DV"][LARGE] = []
    with pytest.raises(ValueError, match="1-DV: no times for phase"):
        score(t, PHASES, procs=1, block=1, replicas=1)


def test_plan_realises_layouts_as_the_planner_does() -> None:
    # 3 ranks × 32 MiB: 2048 small requests against 8 + 8 large ones per rank → s̄ = 16 KiB
    assert common_size(PHASES, 32 << 20) == 16 << 10
    assert common_size(PHASES, 4 << 20) == 16 << 10  # 256 small against 1 + 1 large
    assert common_size(default_phases(1 << 20, 4 << 20), 4 << 20) == 1 << 20
    # by count: 2 requests of 4 B against 1 of 8 B; equal counts (2 and 2): the larger (the planner's rule)
    assert common_size([Phase("w", "write", "sequential", 8), Phase("r", "read", "random", 4)], 8) == 4
    assert common_size([Phase("w", "write", "sequential", 8), Phase("r", "read", "random", 4),
                        Phase("x", "read", "random", 8)], 8) == 8
    layouts = {s.key: s for s in static_layouts(4, 16 << 10)}
    assert set(layouts) == {"1-DH", "1-DV", "2-D:2"}
    assert (layouts["1-DH"].num_dfiles, layouts["1-DH"].strip_size) == (4, 4096)  # 16 KiB / 4 servers
    assert (layouts["1-DV"].num_dfiles, layouts["1-DV"].strip_size) == (1, None)
    assert (layouts["2-D:2"].num_dfiles, layouts["2-D:2"].strip_size) == (2, 8192)
    assert layouts["1-DV"].romio_hints() == {"striping_factor": 1}
    assert layouts["2-D:2"].romio_hints() == {"striping_factor": 2, "striping_unit": 8192}


def test_pinned_static_variants_are_spread_by_the_shim_and_replica_copies_by_slot() -> None:
    params = CostParams(e=1.2e-4, v=4e-9, alpha_seq=0, alpha_rand=0, beta=2.6e-8)
    urls = [f"tcp://10.0.0.{11 + i}:3334" for i in range(4)]
    plan = make_plan(4, 3, 32 << 20, PHASES, params, ["1-DV", "1-DH"], addresses=urls)
    assert {s.key: s.slots for s in plan.layouts} == {"1-DH": 0, "1-DV": 4, "2-D:2": 2}
    root = "/pfslab/hybrid"
    # every variant's files in its own directory, paths as a program names them: nothing is pinned by path
    assert ior_target("1-DV", root) == f"pvfs2:{root}/1-DV/data"
    assert ior_target("hybrid", root) == f"pvfs2:{root}/hybrid/data"
    assert [rank_file(plan, "2-D:2", root, k) for k in range(3)] == [f"{root}/2-D-g2/data.{k:08d}" for k in range(3)]
    # a replica set places its copies itself: the shim's slots give the copy of data.k slot k mod slots
    assert rank_file(plan, "replica 1-DV", root, 2) == f"{root}/.replica-1-DV/slot-2/data.00000002"
    assert rank_file(plan, "replica 1-DH", root, 2) == f"{root}/.replica-1-DH/data.00000002"
    assert [x["user.pvfs2.server_list"] for x in plan.layout("2-D:2").slot_xattrs(urls)] == [
        f"00002 {urls[0]} {urls[1]}", f"00002 {urls[2]} {urls[3]}"]
    shim = json.loads(shim_config(plan, params, root))
    rules = {r["path"]: r for r in shim["rules"]}
    # the static variants of fewer datafiles than servers get the operator's spread: rank k on servers k·d …
    assert rules[f"pvfs2:{root}/1-DV"]["spread"] == {"datafiles": 1}
    assert rules[f"pvfs2:{root}/2-D-g2"]["spread"] == {"datafiles": 2}
    assert "spread" not in rules[f"pvfs2:{root}/1-DH"]
    reps = shim["rules"][-1]["replicas"]
    assert [(r["layout"], r.get("slots")) for r in reps] == [("1-DV", 4), ("1-DH", None)]
    # unpinned (no addresses): no slots anywhere, and the addresses must match the servers
    assert all(s.slots == 0 for s in make_plan(4, 3, 32 << 20, PHASES, params).layouts)
    with pytest.raises(ValueError, match="addresses: 2 given for 4 servers"):
        make_plan(4, 3, 32 << 20, PHASES, params, addresses=urls[:2])


def test_read_passes_repeat_both_read_patterns() -> None:
    names = [p.name for p in default_phases(16 << 10, 4 << 20, passes=2)]
    assert names == ["write", "small-random-read-1", "large-sequential-read-1", "small-random-read-2",
                     "large-sequential-read-2"]
    with pytest.raises(ValueError, match="read passes 0"):
        default_phases(passes=0)


def test_replicas_are_the_models_picks_per_read_phase() -> None:
    # e dominates small requests (one message beats four), β large requests over 3 ranks on 4 servers
    params = CostParams(e=1.2e-4, v=4e-9, alpha_seq=0, alpha_rand=0, beta=2.6e-8)
    plan = make_plan(4, 3, 32 << 20, PHASES, params)
    assert plan.picks == {SMALL: "1-DV", LARGE: "1-DH"}
    assert plan.replicas == ("1-DV", "1-DH")
    assert plan.static_pick == "1-DV"  # 6144 small reads outweigh 48 large requests in the model
    assert plan.variants == ["1-DH", "1-DV", "2-D:2", "default", "hybrid"]
    given = make_plan(4, 3, 32 << 20, PHASES, params, ["2-D:2", "1-DH"])
    assert given.replicas == ("2-D:2", "1-DH")
    with pytest.raises(ValueError, match="distinct layouts"):
        make_plan(4, 3, 32 << 20, PHASES, params, ["1-DH", "1-DH"])
    with pytest.raises(ValueError, match="multiple of its transfer"):
        make_plan(4, 3, (4 << 20) + 1, PHASES, params)


def test_shim_config_is_one_the_shim_accepts() -> None:
    from pfslayout.shimconfig import ShimConfig

    params = CostParams(e=1.2e-4, v=4e-9, alpha_seq=0, alpha_rand=0, beta=2.6e-8)
    plan = make_plan(4, 3, 32 << 20, PHASES, params)
    doc = json.loads(shim_config(plan, params, "/pfslab/hybrid"))
    ShimConfig.model_validate(doc)
    rules = {r["path"]: r for r in doc["rules"]}
    assert rules["pvfs2:/pfslab/hybrid/2-D-g2"]["hints"] == {"striping_factor": 2, "striping_unit": 8192}
    assert "pvfs2:/pfslab/hybrid/default" not in rules  # the default is the file system's, untouched
    reps = rules["pvfs2:/pfslab/hybrid/hybrid"]["replicas"]
    assert reps == [{"dir": "pvfs2:/pfslab/hybrid/.replica-1-DV", "layout": "1-DV", "datafiles": 1},
                    {"dir": "pvfs2:/pfslab/hybrid/.replica-1-DH", "layout": "1-DH", "strip_size": 4096,
                     "datafiles": 4}]
    assert doc["servers"] == 4 and doc["params"]["beta"] == 2.6e-8


def test_routing_sums_the_ranks_counters() -> None:
    rank = {"files": [{"replicas": [{"layout": "1-DV", "reads": 5, "read_bytes": 80, "writes": 0, "write_bytes": 0},
                                    {"layout": "1-DH", "reads": 1, "read_bytes": 4, "writes": 2, "write_bytes": 8}],
                       "deferred_updates": 2, "deferred_bytes": 8, "applied_by_drain": 2}]}
    r = routing([rank, rank])
    assert r["replicas"][0] == {"layout": "1-DV", "reads": 10, "read_bytes": 160, "writes": 0, "write_bytes": 0}
    assert r["replicas"][1]["writes"] == 4 and r["deferred_updates"] == 4 and r["applied_by_drain"] == 4


def test_markdown_quotes_the_command_and_every_figure() -> None:
    plan = make_plan(4, 3, 32 << 20, PHASES, CostParams(e=1.2e-4, v=4e-9, alpha_seq=0, alpha_rand=0, beta=2.6e-8))
    t = _times()
    t["2-D:2"] = t["1-DH"]
    measured = Measured(t, {SMALL: routing([])}, {"1-DV": {"datafiles": 1, "strip": 65536,
                                                            "servers": [["10.251.0.13"], ["10.251.0.13"]]}})
    doc = build_report(plan, measured, {"servers": 4, "rate": "200mbit", "client_namespaces": 0})
    md = results_markdown(doc, "lab/lab hybrid --rounds 3")
    assert "lab/lab hybrid --rounds 3" in md
    assert "Gain over the default layout: +20.7%" in md and "Distance to the per-phase oracle: +45.0%" in md
    assert "Sync cost of the replicas" in md and "192 MiB written instead of 96 MiB" in md
    # 2-D:2 measured as 1-DH: the write and the large read tie between them, so only the small read is decisive
    assert ("Phase by phase against the default layout: 1.21× (geometric mean over 3 phases, 2.50× on the 1 "
            f"decisive ones); worst phase {W} 0.60×.") in md
    assert "1-DV: 13/13" in md  # where the one-datafile files landed (last round only: no per-round record)
    measured.placement = {"1-DV": [[["10.251.0.11"], ["10.251.0.12"]], [["10.251.0.13"], ["10.251.0.13"]]]}
    md = results_markdown(build_report(plan, measured, {"servers": 4}), "lab hybrid")
    assert "1-DV: 11/12, 13/13" in md
    assert json.loads(json.dumps(doc)) == doc  # JSON-ready


