"""The learning loop (reconcilers/trace_collector.py, run by every LayoutPolicy reconcile) driven through
FakeKube (an in-memory stand-in for the API server, pfstestkit/fakekube.py) on the user-facing example
policies/learning.yaml: the rule waiting for a trace, a finished MPIJob collected by a Job of the
operator's image, the rule learned from its summary and its hints applied, a job that left no trace and
a collector Job that failed — each reported naming the field and the fix while the learned layout stays.
The e2e tier (test_real_learning.py) runs the same loop with real IOR ranks writing real traces."""

from __future__ import annotations

import json
from typing import Any

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
