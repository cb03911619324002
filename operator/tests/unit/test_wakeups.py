"""Event-driven reconciles (issue 34 item 3): the alarms (shared/wakeups.py), the watch copies
(shared/watched.py), which changes wake whom (handlers/wakeups.py), the daemon that turns an alarm into a
reconcile (handlers/leveltriggered.py), and the requeue each reconciler asks for while work is in flight.
The e2e tier measures the API requests of 200 idle policies (operator/bench/idle_policies.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import kopf
import pytest
from kopf._cogs.aiokits.aioenums import AsyncFlagWaiter, FlagSetter

from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.operator import settings
from pfslayout.operator.handlers import leveltriggered
from pfslayout.operator.handlers.wakeups import Reactions, fingerprint
from pfslayout.operator.reconcilers import costcalibration as cc_rec
from pfslayout.operator.reconcilers import layoutpolicy as lp_rec
from pfslayout.operator.shared.wakeups import Wakeups
from pfslayout.operator.shared.watched import Watched, slim
from pfstestkit import fakekube
from pfstestkit.fakekube import Events, FakeKube, context, example, hint_log

pytestmark = pytest.mark.unit
NS = "team-a"
F = TypeVar("F", bound=Callable[..., Coroutine[Any, Any, None]])


def on_a_loop(fn: F) -> Callable[..., None]:
    """A test that needs an event loop (the alarms ring on one), run on a fresh one."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))
    return run


class Clock:
    """A clock the alarm tests set by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def obj(kind: str, name: str, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
        **meta: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": NS, "name": name, "uid": f"uid-{name}", "generation": 1, **meta},
            "spec": spec or {}, "status": status or {}}


def policy(name: str, cluster: str = "fs", calibration: str | None = None, **spec: Any) -> dict[str, Any]:
    return obj("LayoutPolicy", name, {"clusterRef": {"name": cluster},
                                      **({"calibrationRef": {"name": calibration}} if calibration else {}), **spec})


# ------------------------------------------------------------------------------------------ alarms


@on_a_loop
async def test_an_alarm_rings_earlier_never_later() -> None:
    clock = Clock()
    w = Wakeups(clock)
    alarm = w.attach(("layoutpolicies", NS, "a"), policy("a"), 300)
    assert alarm.due == 1300 and not alarm.event.is_set()
    w.after(("layoutpolicies", NS, "a"), 600)  # later than due: nothing
    assert alarm.due == 1300
    w.after(("layoutpolicies", NS, "a"), 5)
    await asyncio.sleep(0)  # rung through the loop (thread-safe)
    assert alarm.due == 1005 and alarm.event.is_set()
    w.after(("layoutpolicies", NS, "unknown"), 0)  # no daemon: ignored, no error
    w.detach(("layoutpolicies", NS, "a"), alarm)
    assert list(w.keys()) == []


@on_a_loop
async def test_wake_where_wakes_only_the_matching_objects_of_the_kind_and_namespace() -> None:
    w = Wakeups(Clock())
    a = w.attach(("layoutpolicies", NS, "a"), policy("a", cluster="fs"), 300)
    b = w.attach(("layoutpolicies", NS, "b"), policy("b", cluster="other"), 300)
    c = w.attach(("layoutpolicies", "elsewhere", "c"), policy("c", cluster="fs"), 300)
    woken = w.wake_where("layoutpolicies", NS, lambda body: body["spec"]["clusterRef"]["name"] == "fs")
    assert woken == [("layoutpolicies", NS, "a")]
    assert (a.due, b.due, c.due) == (1000, 1300, 1300)


# ------------------------------------------------------------------------------------- the copies


def test_the_copy_serves_what_the_watch_showed_and_forgets_deletions() -> None:
    seen = Watched()
    body = obj("OrangeFSCluster", "fs", status={"phase": "Ready"})
    seen.put(OFS.plural, body)
    body["status"]["phase"] = "Degraded"  # a copy, not the caller's dict
    assert (seen.get(OFS.plural, NS, "fs") or {})["status"]["phase"] == "Ready"
    seen.drop(OFS.plural, NS, "fs")
    assert seen.get(OFS.plural, NS, "fs") is None


def test_succeeded_mpijobs_are_kept_slim_and_selected_by_label() -> None:
    seen = Watched()
    job = obj("MPIJob", "ior", spec={"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {}}}}},
              status={"conditions": [{"type": "Running", "status": "False"},
                                     {"type": "Succeeded", "status": "True", "lastTransitionTime": "t"}]},
              labels={"app": "ior"})
    running = obj("MPIJob", "other", labels={"app": "ior"})
    assert seen.mpijob(running, deleted=False) is False
    assert seen.mpijob(job, deleted=False) is True
    assert seen.mpijob(job, deleted=False) is False  # seen before: no second wake
    [kept] = seen.succeeded(NS, {"matchLabels": {"app": "ior"}})
    assert "spec" not in kept and [c["type"] for c in kept["status"]["conditions"]] == ["Succeeded"]
    assert slim(kept) == kept == slim(job)  # a listing trimmed to it (k8s/follow.py `trim`) records the same
    assert seen.succeeded(NS, {"matchLabels": {"app": "other"}}) == []
    assert seen.mpijob(job, deleted=True) is False and seen.succeeded(NS, {}) == []


# ------------------------------------------------------------------------------------ who is woken


@on_a_loop
async def test_a_cluster_change_wakes_its_policies_and_calibrations_and_a_repeat_wakes_nobody() -> None:
    w = Wakeups(Clock())
    react = Reactions(Watched(), w)
    w.attach(("layoutpolicies", NS, "p"), policy("p"), 300)
    w.attach(("costcalibrations", NS, "c"), obj("CostCalibration", "c", {"clusterRef": {"name": "fs"}}), 300)
    w.attach(("layoutpolicies", NS, "q"), policy("q", cluster="other"), 300)
    cluster = obj("OrangeFSCluster", "fs", status={"phase": "Provisioning"})
    assert sorted(react.cluster(cluster, False)) == [("costcalibrations", NS, "c"), ("layoutpolicies", NS, "p")]
    assert react.cluster(cluster, False) == []  # the same again (Kopf's own annotations): nobody
    cluster["metadata"]["annotations"] = {"kopf.zalando.org/last-handled-configuration": "{}"}
    assert react.cluster(cluster, False) == []
    cluster["status"]["phase"] = "Ready"
    assert len(react.cluster(cluster, False)) == 2
    assert react.watched.get(OFS.plural, NS, "fs") is not None


@on_a_loop
async def test_a_calibration_wakes_policies_only_when_what_they_read_changes() -> None:
    w = Wakeups(Clock())
    react = Reactions(Watched(), w)
    w.attach(("layoutpolicies", NS, "own"), policy("own", calibration="cal"), 300)
    w.attach(("layoutpolicies", NS, "cluster-s"), policy("cluster-s"), 300)  # the cluster's calibration
    w.attach(("layoutpolicies", NS, "another"), policy("another", calibration="other"), 300)
    cal = obj("CostCalibration", "cal", status={"phase": "Running", "cells": {"progress": "1/24"}})
    assert sorted(k[2] for k in react.calibration(cal, False)) == ["cluster-s", "own"]
    cal["status"]["cells"] = {"progress": "2/24"}  # probing progress: nobody
    assert react.calibration(cal, False) == []
    cal["status"].update(phase="Succeeded", configMapName="cal-params",
                         conditions=[{"type": "Ready", "status": "True"}])
    assert sorted(k[2] for k in react.calibration(cal, False)) == ["cluster-s", "own"]
    assert react.calibration(cal, True) and react.watched.get(CC.plural, NS, "cal") is None


@on_a_loop
async def test_a_succeeded_job_wakes_the_learning_policies_that_select_it_once() -> None:
    w = Wakeups(Clock())
    react = Reactions(Watched(), w)
    learning: dict[str, Any] = {"selector": {"matchLabels": {"app": "ior"}}, "trace": {"enabled": True}}
    w.attach(("layoutpolicies", NS, "learns"), policy("learns", **learning), 300)
    w.attach(("layoutpolicies", NS, "static"), policy("static", selector={"matchLabels": {"app": "ior"}}), 300)
    job = obj("MPIJob", "ior", labels={"app": "ior"},
              status={"conditions": [{"type": "Succeeded", "status": "True"}]})
    assert react.mpijob(job, False) == [("layoutpolicies", NS, "learns")]
    assert react.mpijob(job, False) == []


@on_a_loop
async def test_a_listing_wakes_for_jobs_that_succeeded_unseen_and_forgets_the_deleted() -> None:
    """The webhook mode's MPIJob watch thread (k8s/follow.py) lists again after its watch ends: a job that
    succeeded meanwhile wakes its learners once, one seen before wakes nobody, one deleted is forgotten."""
    w = Wakeups(Clock())
    react = Reactions(Watched(), w)
    w.attach(("layoutpolicies", NS, "learns"), policy("learns", selector={"matchLabels": {"app": "ior"}},
                                                      trace={"enabled": True}), 300)
    done = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    first, gone = (obj("MPIJob", n, labels={"app": "ior"}, status=done) for n in ("first", "gone"))
    assert react.mpijob(first, False) and react.mpijob(gone, False)
    later = obj("MPIJob", "later", labels={"app": "ior"}, status=done)
    running = obj("MPIJob", "running", labels={"app": "ior"})
    assert react.mpijobs_listed([first, later, running]) == [("layoutpolicies", NS, "learns")]
    assert sorted(j["metadata"]["name"] for j in react.watched.succeeded(NS, {})) == ["first", "later"]
    assert react.mpijobs_listed([first, later]) == []


def test_the_fingerprint_ignores_metadata_noise_and_sees_a_scale() -> None:
    a = obj("OrangeFSCluster", "fs", status={"phase": "Ready", "servers": 4}, resourceVersion="1")
    b = obj("OrangeFSCluster", "fs", status={"phase": "Ready", "servers": 4}, resourceVersion="2",
            annotations={"x": "y"})
    assert fingerprint(a) == fingerprint(b)
    b["status"]["servers"] = 8
    assert fingerprint(a) != fingerprint(b)


# ------------------------------------------------------------------------------------- the daemon


def _daemon(s: settings.Settings, step: Any) -> Any:
    registry = kopf.OperatorRegistry()
    default = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        leveltriggered.register(LP, step, s, str, period_s=60, driven=True)
    finally:
        kopf.set_default_registry(default)
    [daemon] = [h for h in registry._spawning.get_all_handlers() if h.id == "progress"]
    return daemon.fn


@on_a_loop
async def test_the_daemon_reconciles_when_rung_and_when_a_reconcile_asks_not_on_a_poll(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = Wakeups()  # the real clock: the daemon sleeps on the event loop's
    monkeypatch.setattr(leveltriggered, "WAKEUPS", w)
    monkeypatch.setattr(leveltriggered, "context", lambda s: context(FakeKube(), Events()))
    calls: list[float] = []

    def step(ctx: Any, body: dict[str, Any]) -> str:
        calls.append(w.clock())
        if len(calls) == 1:
            ctx.requeue(0.2)  # work in flight: call again soon
        return "done"

    # the first alarm is the retry delay away (a standby taking over reconciles soon); the period is 60 s
    s = settings.load({"PFSLAYOUT_RETRY_SECONDS": "0.3"})
    fn = _daemon(s, step)
    setter: FlagSetter[Any] = FlagSetter()
    task = asyncio.ensure_future(fn(body=policy("p"), logger=logging.getLogger("t"), stopped=AsyncFlagWaiter(setter)))

    async def until(n: int) -> None:
        for _ in range(300):
            await asyncio.sleep(0.01)
            if len(calls) >= n:
                return
        raise AssertionError(f"{len(calls)} reconciles, expected {n}")

    await until(1)  # the first alarm
    await until(2)  # the requeue it asked for
    assert calls[1] - calls[0] >= 0.2
    w.wake(("layoutpolicies", NS, "other"))  # another object's wake: not this one
    await asyncio.sleep(0.5)
    assert len(calls) == 2  # no poll: nothing asked, the period is a minute
    w.wake(("layoutpolicies", NS, "p"))  # a watched change
    await until(3)
    setter.set()
    await asyncio.wait_for(task, 2)
    assert list(w.keys()) == []


# ------------------------------------------------------------------------------ requeue requests


def asking(kube: FakeKube, events: Events, **s: Any) -> tuple[Any, list[float]]:
    asked: list[float] = []
    return dataclasses.replace(context(kube, events, **s), requeue=asked.append), asked


def test_a_policy_asks_for_a_poll_only_while_its_hint_job_runs_then_for_the_drift_check() -> None:
    kube, events = FakeKube(), Events()
    fakekube.ready_cluster(kube, "layoutpolicy.yaml", NS, "layouts")
    body = example("layoutpolicy.yaml", "LayoutPolicy")
    assert kube.custom.create(LP, NS, body) is not None
    ctx, asked = asking(kube, events, layout_poll_s=5, layout_recheck_s=600)
    lp_rec.reconcile(ctx, kube.custom.get(LP, NS, body["metadata"]["name"]) or {})
    assert asked == [10]  # the hint Job was created: its pod needs a few seconds, so two polls
    [job] = kube.list("Job", NS, "app.kubernetes.io/component=hints")
    kube.finish_job(NS, job["metadata"]["name"], ok=True, log=hint_log(job))
    ctx, asked = asking(kube, events, layout_poll_s=5, layout_recheck_s=600)
    lp_rec.reconcile(ctx, kube.custom.get(LP, NS, body["metadata"]["name"]) or {})
    # applied: the next drift check, not a poll — a few seconds after the period, its own (a tenth at most)
    assert len(asked) == 1 and 590 < asked[0] <= 660
    spread = asked[0] - 600
    ctx, asked = asking(kube, events, layout_poll_s=5, layout_recheck_s=600)
    lp_rec.reconcile(ctx, kube.custom.get(LP, NS, body["metadata"]["name"]) or {})
    assert len(asked) == 1 and abs((asked[0] - 600) - spread) < 5  # the same policy, the same offset


def test_a_calibration_asks_for_a_poll_while_running_and_nothing_while_waiting_for_its_cluster() -> None:
    kube, events = FakeKube(), Events()
    cal = example("costcalibration.yaml", "CostCalibration")
    assert kube.custom.create(CC, NS, cal) is not None
    ctx, asked = asking(kube, events, calibration_poll_s=5)
    st = cc_rec.reconcile(ctx, kube.custom.get(CC, NS, cal["metadata"]["name"]) or {})
    assert st["phase"] == "Pending" and asked == []  # the cluster's change will wake it
    fakekube.ready_cluster(kube, "costcalibration.yaml", NS, "probe-4")
    ctx, asked = asking(kube, events, calibration_poll_s=5)
    st = cc_rec.reconcile(ctx, kube.custom.get(CC, NS, cal["metadata"]["name"]) or {})
    assert st["phase"] == "Running" and asked == [5]
