"""The learning loop (reconcilers/trace_collector.py, run by every LayoutPolicy reconcile) driven through
FakeKube (an in-memory stand-in for the API server, pfstestkit/fakekube.py) on the user-facing example
policies/learning.yaml: the rule waiting for a trace, a finished MPIJob collected by a Job of the
operator's image, the rule learned from its summary and its hints applied, a job that left no trace and
a collector Job that failed — each reported naming the field and the fix while the learned layout stays.
The e2e tier (test_real_learning.py) runs the same loop with real IOR ranks writing real traces."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pfslayout import naming
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy import learn
from pfslayout.operator.reconcilers import layoutpolicy as rec
from pfslayout.planner.summary import TraceSummary
from pfstestkit import fakekube
from pfstestkit.fakekube import Events, FakeKube, context, example, hint_log

NS = "team-a"
NAME = "learning"
IMAGE = "registry.example/pfs-layout-operator:9.9"
COLLECTORS = f"app.kubernetes.io/component={learn.COLLECTOR_COMPONENT},pfslayout.io/layoutpolicy={NAME}"
HINT_JOBS = f"app.kubernetes.io/component=hints,pfslayout.io/layoutpolicy={NAME}"
# What `pfslayout summarise` reports of IOR's shared-file run: 4 ranks, 1 MiB requests.
SHARED = TraceSummary(path="/mnt/orangefs/ior", requests=64, bytes=64 << 20, ranks=4, files=1, sharing="shared",
                      read_fraction=0.5, dominant_size=1 << 20, rows=[(4, 1, 1 << 20, 0, 64)])


def step(kube: FakeKube, events: Events) -> dict[str, Any]:
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    return rec.reconcile(context(kube, events, operator_image=IMAGE), body)


def cond(st: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in st["conditions"] if c["type"] == type_)


def answer_hints(kube: FakeKube) -> None:
    """The policy's hint Job finished on a file system that takes every hint."""
    jobs = kube.list("Job", NS, HINT_JOBS)
    assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
    kube.finish_job(NS, jobs[0]["metadata"]["name"], ok=True, log=hint_log(jobs[0]))


def waiting(kube: FakeKube, events: Events) -> dict[str, Any]:
    """A Ready cluster, the example policy created, its trace directory made: the rule waits."""
    fakekube.ready_cluster(kube, "learning.yaml", NS, NAME)
    assert kube.custom.create(LP, NS, example("learning.yaml", "LayoutPolicy")) is not None
    step(kube, events)
    answer_hints(kube)
    return step(kube, events)


def mpijob_succeeded(kube: FakeKube, name: str) -> None:
    job = example("learning.yaml", "MPIJob")
    job["metadata"]["name"] = name
    assert kube.custom.create(MPIJOB, NS, job) is not None
    kube.finish_mpijob(NS, name, ok=True)


def collector(kube: FakeKube) -> dict[str, Any]:
    jobs = kube.list("Job", NS, COLLECTORS)
    assert len(jobs) == 1, [j["metadata"]["name"] for j in jobs]
    return jobs[0]


def summary_log(files: int, summaries: dict[str, TraceSummary]) -> str:
    doc = {"ranks": files, "summaries": {p: s.model_dump(mode="json") for p, s in summaries.items()}}
    return f"PFSLAYOUT-TRACE-FILES {files}\n{learn.MARKER} {json.dumps(doc)}\n"


def learned_from_shared(kube: FakeKube, events: Events) -> dict[str, Any]:
    waiting(kube, events)
    mpijob_succeeded(kube, "ior-shared")
    step(kube, events)
    kube.finish_job(NS, collector(kube)["metadata"]["name"], ok=True, log=summary_log(4, {SHARED.path: SHARED}))
    step(kube, events)
    answer_hints(kube)
    return step(kube, events)


def test_the_rule_waits_for_a_trace_and_publishes_where_jobs_write_it() -> None:
    kube, events = FakeKube(), Events()
    st = waiting(kube, events)
    rule = st["rules"][0]
    assert rule["source"] == "trace" and not rule["applied"] and "waiting for a traced run" in rule["message"]
    assert cond(st, "Learned")["reason"] == "WaitingForTrace" and cond(st, "Ready")["status"] == "True"
    assert st["learning"]["traceDirectory"] == f"/mnt/orangefs/.pfslayout/traces/{NS}"
    shim = kube.get("ConfigMap", NS, naming.shim_configmap(NAME))
    assert shim is not None
    assert json.loads(shim["data"]["shim.json"])["trace"]["dir"] == f"pvfs2:/mnt/orangefs/.pfslayout/traces/{NS}"
    assert kube.list("Job", NS, COLLECTORS) == []


def test_a_finished_job_is_collected_by_a_job_of_the_operators_image() -> None:
    kube, events = FakeKube(), Events()
    waiting(kube, events)
    mpijob_succeeded(kube, "ior-shared")
    st = step(kube, events)
    job = collector(kube)
    assert job["metadata"]["annotations"]["pfslayout.io/mpijob"] == "ior-shared"
    summarise = job["spec"]["template"]["spec"]["containers"][0]
    assert summarise["image"] == IMAGE  # the context's settings, not the process's environment
    assert cond(st, "Learned")["reason"] == "Collecting" and "ior-shared" in cond(st, "Learned")["message"]
    assert "CollectingTrace" in events.reasons()
    assert step(kube, events) and len(kube.list("Job", NS, COLLECTORS)) == 1  # running: nothing new


def test_a_collected_trace_replans_the_rule_and_its_hints_are_applied() -> None:
    kube, events = FakeKube(), Events()
    st = learned_from_shared(kube, events)
    rule = st["rules"][0]
    assert rule["applied"] and rule["trace"]["job"] == "ior-shared" and rule["trace"]["ranks"] == 4
    assert rule["trace"]["sharing"] == "shared" and rule["trace"]["dominantSize"] == 1 << 20
    first = rule["history"][0]
    assert first["job"] == "ior-shared" and not first["switched"] and first["reason"].startswith("first trace")
    assert cond(st, "Learned")["status"] == "True" and st["learning"]["lastJob"] == "ior-shared"
    assert st["learning"]["collectedJobs"] == 1 and cond(st, "Ready")["reason"] == "Applied"
    assert kube.list("Job", NS, COLLECTORS) == []  # deleted once its result was recorded
    record = kube.get("ConfigMap", NS, naming.learned_configmap(NAME))
    assert record is not None and json.loads(record["data"]["state.json"])["lastJob"] == "ior-shared"
    assert {"TraceLearned", "HintsApplied"} <= set(events.reasons())
    assert step(kube, events)["learning"]["collectedJobs"] == 1  # learned from exactly once


def test_a_job_that_left_no_trace_is_reported_with_the_field_and_the_fix() -> None:
    kube, events = FakeKube(), Events()
    learned_from_shared(kube, events)
    mpijob_succeeded(kube, "no-shim")
    step(kube, events)
    kube.finish_job(NS, collector(kube)["metadata"]["name"], ok=True, log=f'{learn.MARKER} {{"files":0}}\n')
    st = step(kube, events)
    learned = cond(st, "Learned")
    assert learned["reason"] == "TraceUnreadable" and "no-shim" in learned["message"]
    assert "no trace files" in learned["message"]
    warning = events.message("TraceUnreadable")
    assert "spec.rules[0].auto.source" in warning and "PFSLAYOUT_SHIM_JOB" in warning
    assert st["rules"][0]["applied"] and st["rules"][0]["trace"]["job"] == "ior-shared"  # the layout stays


def test_a_failed_collector_job_is_reported_and_not_retried() -> None:
    kube, events = FakeKube(), Events()
    waiting(kube, events)
    mpijob_succeeded(kube, "ior-shared")
    step(kube, events)
    name = collector(kube)["metadata"]["name"]
    kube.finish_job(NS, name, ok=False, log="cannot copy ior-shared.rank-000000.pfstrace")
    st = step(kube, events)
    assert cond(st, "Learned")["reason"] == "TraceUnreadable"
    assert f"collector Job {name} failed" in cond(st, "Learned")["message"]
    assert ("Job", NS, name) in kube.deleted
    step(kube, events)
    assert kube.list("Job", NS, COLLECTORS) == []  # marked collected: not collected again


# ------------------------------------------------------------------------------- predicted vs measured

PARAMS = {"e": 1e-4, "v": 1e-9, "alpha_seq": 1e-4, "alpha_rand": 3e-4, "beta": 8e-9}


def judged_policy(kube: FakeKube, events: Events, above: float | None = 0.5, after: int = 2) -> None:
    """learning.yaml's cluster and job, a Ready CostCalibration `cal` (its parameters in ConfigMap
    cal-params) and a policy with an explicit 1-DH rule on /ior using it, tracing with recalibrateAbove/After."""
    from pfslayout.kinds import COST_CALIBRATION as CC

    fakekube.ready_cluster(kube, "learning.yaml", NS, NAME)
    cal = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "CostCalibration", "metadata": {"name": "cal"},
           "spec": {"clusterRef": {"name": NAME}}}
    assert kube.custom.create(CC, NS, cal) is not None
    kube.custom.patch_status(CC, NS, "cal", {"phase": "Ready", "configMapName": "cal-params", "conditions": [
        {"type": "Ready", "status": "True", "reason": "Fitted", "message": "", "lastTransitionTime": "x"}]})
    kube.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cal-params", "namespace": NS},
              "data": {"params.json": json.dumps(PARAMS)}})
    lp = example("learning.yaml", "LayoutPolicy")
    lp["spec"]["calibrationRef"] = {"name": "cal"}
    lp["spec"]["rules"] = [{"path": "/ior", "mode": "explicit", "fileSharing": "shared",
                            "explicit": {"layout": "1-DH", "stripSize": 65536}}]
    lp["spec"]["trace"] = {"enabled": True, **({"recalibrateAbove": above} if above is not None else {}),
                           "recalibrateAfter": after}
    assert kube.custom.create(LP, NS, lp) is not None
    step(kube, events)
    answer_hints(kube)
    st = step(kube, events)
    assert st["rules"][0]["applied"] and st["paramsSource"] == "CostCalibration/cal", st


def traced(kube: FakeKube, events: Events, name: str, summary: TraceSummary) -> dict[str, Any]:
    mpijob_succeeded(kube, name)
    step(kube, events)
    kube.finish_job(NS, collector(kube)["metadata"]["name"], ok=True, log=summary_log(4, {summary.path: summary}))
    return step(kube, events)


def test_every_traced_job_is_judged_against_the_models_prediction_on_the_layout_in_place() -> None:
    from pfslayout.costmodel import CostParams
    from pfslayout.planner.summary import plan_summary

    kube, events = FakeKube(), Events()
    judged_policy(kube, events, above=None)
    predicted = next(c.total for c in plan_summary(SHARED, 4, CostParams.model_validate(PARAMS)).decisions[0].candidates
                     if c.layout == "1-DH")
    st = traced(kube, events, "run-1", SHARED.model_copy(update={"seconds": predicted / 2}))
    p = st["rules"][0]["prediction"]
    assert p["judged"] and p["job"] == "run-1" and p["layout"] == "1-DH"
    assert p["predictedSeconds"] == predicted and p["measuredSeconds"] == predicted / 2 and p["error"] == 1.0
    assert st["learning"]["prediction"]["error"] == 1.0 and st["learning"]["prediction"]["job"] == "run-1"
    assert st["learning"]["prediction"]["streak"] == 0  # no recalibrateAbove: reported, never counted
    assert cond(st, "Learned")["status"] == "True" and "predicted" in cond(st, "Learned")["message"]
    from pfslayout.metrics import PREDICTION_ERROR
    assert PREDICTION_ERROR.labels(NS, NAME, "/ior")._value.get() == 1.0
    # too small to judge: reported as such, counts neither way
    small = SHARED.model_copy(update={"requests": learn.MIN_JUDGED_REQUESTS - 1, "seconds": 1.0})
    p = traced(kube, events, "run-2", small)["rules"][0]["prediction"]
    assert not p["judged"] and f"fewer than the {learn.MIN_JUDGED_REQUESTS}" in p["reason"] and "error" not in p


def test_an_error_above_the_bound_for_consecutive_jobs_reruns_the_calibration() -> None:
    from pfslayout.kinds import COST_CALIBRATION as CC
    from pfslayout.kinds.costcalibration.objects import RECALIBRATE_ANNOTATION

    kube, events = FakeKube(), Events()
    judged_policy(kube, events, above=0.5, after=2)
    far = SHARED.model_copy(update={"seconds": 1e-6})  # the model predicts far more than was measured
    st = traced(kube, events, "run-1", far)
    assert st["learning"]["prediction"]["streak"] == 1
    assert RECALIBRATE_ANNOTATION not in (kube.custom.get(CC, NS, "cal") or {})["metadata"].get("annotations", {})
    st = traced(kube, events, "run-2", far)
    pred = st["learning"]["prediction"]
    assert pred["streak"] == 0 and pred["recalibrations"] == 1  # counted again from 0 after the re-run
    last = pred["lastRecalibration"]
    assert last["job"] == "run-2" and last["calibration"] == "cal" and "2 consecutive traced jobs" in last["reason"]
    ann = (kube.custom.get(CC, NS, "cal") or {})["metadata"]["annotations"]
    assert ann[RECALIBRATE_ANNOTATION] == last["token"] and last["token"].startswith("trace-run-2-")
    assert "re-running CostCalibration cal" in events.message("Recalibrating")
    # a judged job within the bound resets the count
    predicted = st["rules"][0]["prediction"]["predictedSeconds"]
    st = traced(kube, events, "run-3", far)
    assert st["learning"]["prediction"]["streak"] == 1
    st = traced(kube, events, "run-4", SHARED.model_copy(update={"seconds": predicted}))
    assert st["learning"]["prediction"]["streak"] == 0 and st["learning"]["prediction"]["recalibrations"] == 1


def test_learn_judge_and_the_streak_by_hand() -> None:
    from pfslayout.costmodel import CostParams

    params = CostParams.model_validate(PARAMS)
    assert learn.judge(SHARED, None, 4, params, "corrected").reason.startswith("no layout of the model")  # type: ignore[union-attr]
    no_times = learn.judge(SHARED, {"layout": "1-DV"}, 4, params, "corrected")
    assert no_times.error is None and no_times.reason == "the trace has no request times"
    j = learn.judge(SHARED.model_copy(update={"seconds": 2.0}), {"layout": "2-D", "groups": 2}, 4, params,
                    "corrected")
    assert j.layout == "2-D/g2" and j.measured == 2.0 and j.error == j.predicted / 2.0 - 1  # type: ignore[operator]
    a = learn.Judgement("1-DH", 3.0, 1.0)
    b = learn.Judgement("1-DV", 1.0, 3.0)
    assert learn.job_error([a, b, learn.Judgement(None, None, None, "x")]) == 0.0  # 4 s predicted, 4 s measured
    assert learn.job_error([]) is None
    assert learn.recalibration_due(0, 0.6, 0.5, 2) == (1, False)
    assert learn.recalibration_due(1, -0.7, 0.5, 2) == (0, True)  # too fast counts as much as too slow
    assert learn.recalibration_due(1, 0.2, 0.5, 2) == (0, False)
    assert learn.recalibration_due(1, None, 0.5, 2) == (1, False)  # not judged: unchanged
    assert learn.recalibration_due(5, 9.0, None, 2) == (5, False)  # no bound: never


# ------------------------------------------------------------------------------- trace retention

def listing(*runs: tuple[str, str]) -> str:
    """Collector listing lines (`pvfs2-ls -l --all-times`) for (job, mtime) runs of two ranks each, and a
    file that is no run's."""
    out = []
    for job, mtime in runs:
        for name in (f"{job}.rank-000000.pfstrace", f"{job}.rank-000001.pfstrace", f"{job}.stats.rank-000000.json"):
            out.append(f"{learn.ENTRY_MARKER} -rw-r--r--    1 10001 10001 4096 {mtime} +0000  {mtime} +0000  "
                       f"{mtime} +0000 {name}")
    out.append(f"{learn.ENTRY_MARKER} drwxr-xr-x    1 10001 10001 4096 2026-01-01 00:00:00 +0000  2026-01-01 "
               f"00:00:00 +0000  2026-01-01 00:00:00 +0000 notes")
    return "\n".join(out) + "\n"


def test_retention_picks_all_but_the_newest_runs_and_those_too_old() -> None:
    runs = learn.listing_runs(listing(("a", "2026-11-01 10:00:00"), ("b", "2026-11-02 10:00:00"),
                                      ("c", "2026-11-03 10:00:00")) + "garbage line\n")
    assert sorted(runs) == ["a", "b", "c"]
    now = runs["c"] + 3600
    assert learn.expired(runs, learn.Retention(2, None), now, "c") == ["a"]
    assert learn.expired(runs, learn.Retention(1, None), now, "a") == ["b", "c"]  # the one collected stays
    assert learn.expired(runs, learn.Retention(20, learn.duration_s("1d12h")), now, "c") == ["a"]
    assert learn.expired(runs, learn.Retention(0, None), now, "c") == ["a", "b"]
    assert learn.duration_s("7d") == 7 * 86400 and learn.duration_s("90m") == 5400
    with pytest.raises(ValueError, match="duration"):
        learn.duration_s("7 days")


def test_the_collector_deletes_only_the_runs_it_is_given() -> None:
    script = learn.collector_script("/mnt/orangefs/t/ns", "new", ["old-1", "old.2"])
    assert 'pfs-relayout remove "$@"' in script
    assert "old-1.rank-*|old-1.stats.rank-*|old.2.rank-*|old.2.stats.rank-*)" in script
    assert learn.PRUNED_MARKER in script and "pvfs2-ls -l --all-times" in script
    assert "pfs-relayout" not in learn.collector_script("/d", "new")  # nothing to delete: no deletion step
    # run by sh over stand-ins of the client tools (test_relayout_loopback.py runs it on real OrangeFS): only
    # the listed runs' files go
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fs = root / "fs"
        fs.mkdir()
        for name in ("old-1.rank-000000.pfstrace", "old-1.stats.rank-000000.json", "keep.rank-000000.pfstrace",
                     "new.rank-000000.pfstrace", "old-10.rank-000000.pfstrace"):
            (fs / name).write_text("x")
        (root / "traces").mkdir()
        tools = root / "bin"
        tools.mkdir()
        (tools / "pvfs2-ls").write_text('#!/bin/sh\n[ "$1" = -l ] && exit 1\nls "$1"\n')
        (tools / "pfs-relayout").write_text(
            '#!/bin/sh\nshift\nfor f; do rm "$f" && echo "PFSLAYOUT-REMOVED\t$f"; done\n')
        (tools / "pvfs2-cp").write_text('#!/bin/sh\ncp "$1" "$2"\n')
        for t in tools.iterdir():
            t.chmod(0o755)
        text = learn.collector_script(str(fs), "new", ["old-1"]).replace("/traces/", f"{root}/traces/")
        run = subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=30, check=False,
                             env={"PATH": f"{tools}:/usr/bin:/bin"})
        assert run.returncode == 0, run.stderr
        assert sorted(p.name for p in fs.iterdir()) == ["keep.rank-000000.pfstrace", "new.rank-000000.pfstrace",
                                                        "old-10.rank-000000.pfstrace"]
        assert f"{learn.PRUNED_MARKER} 2" in run.stdout and f"{learn.FILES_MARKER} 1" in run.stdout


def test_the_next_collector_deletes_the_runs_beyond_the_policys_retention() -> None:
    kube, events = FakeKube(), Events()
    waiting(kube, events)
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    kube.custom.patch(LP, NS, NAME, {"spec": {"trace": {"retain": {"runs": 1}}}})
    mpijob_succeeded(kube, "ior-shared")
    step(kube, events)
    first = collector(kube)
    assert "pfs-relayout" not in first["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    kube.finish_job(NS, first["metadata"]["name"], ok=True, log=summary_log(4, {SHARED.path: SHARED}) + listing(
        ("older-job", "2026-11-29 10:00:00"), ("ior-shared", "2026-11-30 10:00:00")))
    step(kube, events)
    answer_hints(kube)
    step(kube, events)
    mpijob_succeeded(kube, "ior-again")
    step(kube, events)
    copy = collector(kube)["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    assert "older-job.rank-*|older-job.stats.rank-*)" in copy and "ior-shared.rank-*" not in copy
    kube.finish_job(NS, collector(kube)["metadata"]["name"], ok=True,
                    log=f"{learn.PRUNED_MARKER} 3\n" + summary_log(4, {SHARED.path: SHARED}))
    step(kube, events)
    said = events.message("TracesPruned")
    assert "deleted 3 trace files of 1 earlier runs" in said and "older-job" in said, said
    assert "spec.trace.retain keeps the newest 1" in said
