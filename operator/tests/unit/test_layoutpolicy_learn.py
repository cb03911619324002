"""The LayoutPolicy learning loop's pure decisions (kinds/layoutpolicy/learn.py) and a `source: trace`
rule planned from what it learned (rules.py): which jobs, the collector Job, the shim config, hysteresis."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pfslayout.costmodel import SEED_ETHERNET
from pfslayout.k8s.meta import Owner
from pfslayout.kinds import LAYOUT_POLICY
from pfslayout.kinds.layoutpolicy import learn
from pfslayout.kinds.layoutpolicy.rules import Platform, decide_rule
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.planner.summary import TraceSummary

PLATFORM = Platform(4, "/mnt/orangefs", tuple(f"tcp://s{i}:3334" for i in range(4)))
OWNER = Owner(LAYOUT_POLICY, "lp", "ns", "uid-lp")
ALL = ["1-DH", "1-DV", "2-D"]


def summary(p: int, m: int, size: int, sharing: str, count: int = 100) -> TraceSummary:
    return TraceSummary(path="/mnt/orangefs/out", requests=count, bytes=count * size, ranks=p,
                        files=p if sharing == "file-per-process" else 1, sharing=sharing,  # type: ignore[arg-type]
                        read_fraction=0.0, dominant_size=size, rows=[(p, m, size, 0, count)])


MANY_SMALL = summary(16, 4, 65536, "file-per-process")  # 1-DV wins by far
ONE_HUGE = summary(1, 1, 64 << 20, "shared")  # 1-DH wins
NEAR_TIE = summary(2, 1, 16 << 20, "shared")  # 2-D g=2 beats 1-DH by well under 10 %


def job(name: str, uid: str, done: str | None) -> dict[str, Any]:
    conds = [{"type": "Succeeded", "status": "True", "lastTransitionTime": done}] if done else \
        [{"type": "Running", "status": "True"}]
    return {"metadata": {"name": name, "uid": uid}, "status": {"conditions": conds}}


def test_first_trace_takes_the_cheapest_allowed_layout() -> None:
    c = learn.choose(MANY_SMALL, ALL, None, 4, SEED_ETHERNET, "corrected", 0.1, "j1", "t1")
    assert (c.layout, c.g) == ("1-DV", None)
    assert c.entry["switched"] is False and c.entry["reason"].startswith("first trace")
    only_wide = learn.choose(MANY_SMALL, ["1-DH", "2-D"], None, 4, SEED_ETHERNET, "corrected", 0.1, "j1", "t1")
    assert (only_wide.layout, only_wide.g) == ("2-D", 2)


def test_a_clear_winner_switches_and_a_near_tie_keeps_the_current_layout() -> None:
    switch = learn.choose(ONE_HUGE, ALL, {"layout": "1-DV"}, 4, SEED_ETHERNET, "corrected", 0.1, "j2", "t2")
    assert switch.layout == "1-DH" and switch.entry["switched"] is True
    assert switch.entry["previous"] == "1-DV" and switch.entry["gain"] > 0.1
    keep = learn.choose(NEAR_TIE, ALL, {"layout": "1-DH"}, 4, SEED_ETHERNET, "corrected", 0.1, "j3", "t3")
    assert keep.layout == "1-DH" and keep.entry["switched"] is False
    assert 0 < keep.entry["gain"] <= 0.1 and keep.entry["reason"].startswith("kept 1-DH")
    # with no hysteresis the same trace does switch
    eager = learn.choose(NEAR_TIE, ALL, {"layout": "1-DH"}, 4, SEED_ETHERNET, "corrected", 0.0, "j3", "t3")
    assert (eager.layout, eager.g, eager.entry["switched"]) == ("2-D", 2, True)


def test_jobs_are_learned_from_once_oldest_first() -> None:
    jobs = [job("b", "u2", "2026-01-02T00:00:00Z"), job("a", "u1", "2026-01-01T00:00:00Z"), job("c", "u3", None)]
    assert learn.next_job(jobs, [])["metadata"]["name"] == "a"  # type: ignore[index]
    assert learn.next_job(jobs, ["u1"])["metadata"]["name"] == "b"  # type: ignore[index]
    assert learn.next_job(jobs, ["u1", "u2"]) is None  # c is still running


def test_label_selector_string() -> None:
    sel = {"matchLabels": {"app": "ior", "team": "io"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                {"key": "skip", "operator": "DoesNotExist"}]}
    assert learn.label_selector(sel) == "app=ior,team=io,tier in (a,b),!skip"
    assert learn.label_selector({}) == ""


def test_collector_job_copies_then_summarises() -> None:
    cluster = parse_spec({"servers": {"count": 4}})
    j = learn.collector_job(cluster, "fs", OWNER, job("ior-1", "u1", "t"), "/mnt/orangefs/.pfslayout/traces/ns",
                            ["/mnt/orangefs/out"], "pfslayout/operator:dev", "IfNotPresent", {"x": "y"})
    pod = j["spec"]["template"]["spec"]
    assert j["metadata"]["name"] == learn.collector_name(OWNER, job("ior-1", "u1", "t"))
    assert j["metadata"]["annotations"]["pfslayout.io/mpijob-uid"] == "u1"
    assert pod["initContainers"][0]["image"] == "pfslayout/orangefs:dev"
    assert "ior-1.rank-" in pod["initContainers"][0]["command"][2]
    run = pod["containers"][0]["command"][2]
    assert pod["containers"][0]["image"] == "pfslayout/operator:dev"
    assert "pfslayout summarise --trace /traces --format shim" in run and "--path /mnt/orangefs/out" in run
    assert pod["automountServiceAccountToken"] is False


def test_collector_log_is_parsed_or_refused() -> None:
    doc = {"ranks": 4, "summaries": {"/mnt/orangefs/out": MANY_SMALL.model_dump(mode="json")}}
    ranks, got = learn.parse_collector_log(f"noise\n{learn.MARKER} {json.dumps(doc)}\n")
    assert ranks == 4 and got["/mnt/orangefs/out"].requests == 100
    assert learn.parse_collector_log(f'{learn.MARKER} {{"files":0}}') == (0, {})
    with pytest.raises(learn.TraceError, match="no PFSLAYOUT-TRACE-SUMMARY"):
        learn.parse_collector_log("pfslayout: --trace: holds no I/O requests")
    with pytest.raises(learn.TraceError, match="not valid"):
        learn.parse_collector_log(f'{learn.MARKER} {{"summaries": {{"/x": {{"rows": 3}}}}}}')


TRACE_RULE = {"path": "/out", "mode": "auto", "auto": {"source": "trace"}}


def test_a_trace_rule_waits_then_uses_the_learned_layout() -> None:
    waiting = decide_rule(TRACE_RULE, 0, PLATFORM, SEED_ETHERNET, "corrected", 0.1)
    assert waiting.error is None and waiting.pending and waiting.status["applied"] is False
    assert [(x.path, dict(x.xattrs)) for x in waiting.dirs] == [("/mnt/orangefs/out", {})]  # created, no hints
    assert "waiting for a traced run" in waiting.status["message"]
    c = learn.choose(MANY_SMALL, ALL, None, 4, SEED_ETHERNET, "corrected", 0.1, "ior-1", "2026-01-01T00:00:00Z")
    entry = {"summary": MANY_SMALL.model_dump(mode="json"), "job": "ior-1", "at": "2026-01-01T00:00:00Z",
             "layout": {"layout": c.layout}, "history": [c.entry]}
    d = decide_rule(TRACE_RULE, 0, PLATFORM, SEED_ETHERNET, "corrected", 0.1, entry)
    assert d.error is None and d.status["source"] == "trace" and d.status["layout"]["layout"] == "1-DV"
    assert d.dirs[0].path == "/mnt/orangefs/out" and d.dirs[0].xattrs["user.pvfs2.num_dfiles"] == "1"
    assert d.status["trace"]["job"] == "ior-1" and d.status["history"][-1]["job"] == "ior-1"
    assert "from the trace of MPIJob ior-1" in d.status["message"]
    narrowed = decide_rule({**TRACE_RULE, "auto": {"source": "trace", "candidates": ["1-DH"]}}, 0, PLATFORM,
                           SEED_ETHERNET, "corrected", 0.1, entry)
    assert narrowed.error is not None and narrowed.error.startswith("spec.rules[0].auto.candidates")
