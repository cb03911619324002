"""The LayoutPolicy reconciler's decision paths driven through FakeKube (an in-memory stand-in for the
API server, pfstestkit/fakekube.py), on the user-facing example policies/layoutpolicy.yaml: waiting for the
cluster, hints applied through a hint Job and verified, an unchanged and a changed policy, an invalid
rule, a failed hint Job and its retry pause, a drift check that repairs hints, and deletion."""

from __future__ import annotations

from typing import Any

from pfslayout import naming
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.reconcilers import layoutpolicy as rec
from pfslayout.orangefs import relayout
from pfstestkit import fakekube
from pfstestkit.fakekube import Events, FakeKube, context, example, hint_log

NS = "team-a"
NAME = "layouts"
RECHECK_S = 300.0
HINT_JOBS = f"app.kubernetes.io/component=hints,pfslayout.io/layoutpolicy={NAME}"


def ready_cluster(kube: FakeKube) -> None:
    fakekube.ready_cluster(kube, "layoutpolicy.yaml", NS, NAME)


def create(kube: FakeKube, rules: list[dict[str, Any]] | None = None) -> None:
    body = example("layoutpolicy.yaml", "LayoutPolicy")
    if rules is not None:
        body["spec"]["rules"] = rules
    assert kube.custom.create(LP, NS, body) is not None


def step(kube: FakeKube, events: Events, recheck_s: float = RECHECK_S) -> dict[str, Any]:
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    return rec.reconcile(context(kube, events, layout_recheck_s=recheck_s), body)


def stored(kube: FakeKube) -> dict[str, Any]:
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    return dict(body.get("status") or {})


def cond(st: dict[str, Any], type_: str = "Ready") -> dict[str, Any]:
    return next(c for c in st["conditions"] if c["type"] == type_)


def hint_job(kube: FakeKube) -> dict[str, Any]:
    jobs = kube.list("Job", NS, HINT_JOBS)
    assert len(jobs) == 1
    return jobs[0]


def answer(kube: FakeKube, ok: bool = True, log: str | None = None) -> str:
    """Finishes the policy's hint Job (by default on a file system that takes every hint)."""
    job = hint_job(kube)
    name = str(job["metadata"]["name"])
    kube.finish_job(NS, name, ok=ok, log=hint_log(job) if log is None else log)
    return name


def applied(kube: FakeKube, events: Events) -> None:
    """A ready cluster, the example policy created and its hints applied and verified."""
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    answer(kube)
    step(kube, events)


def test_it_waits_for_a_missing_cluster_naming_the_field() -> None:
    kube, events = FakeKube(), Events()
    create(kube)
    st = step(kube, events)
    assert cond(st)["status"] == "False" and cond(st)["reason"] == "ClusterNotReady"
    assert cond(st)["message"].startswith("spec.clusterRef.name")
    assert cond(stored(kube))["reason"] == "ClusterNotReady"
    assert kube.applied == []
    assert "ClusterNotReady" in events.reasons()


def test_creation_plans_every_rule_and_starts_a_hint_job() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    st = step(kube, events)
    assert cond(st)["reason"] == "Applying" and cond(st)["status"] == "False"
    assert cond(st, "Calibrated")["reason"] == "NoCalibration" and st["paramsSource"] == rec.DEFAULTS
    assert [r["path"] for r in st["rules"]] == ["/results", "/checkpoints", "/inputs"]
    assert all(r["applied"] is False for r in st["rules"]) and st["appliedRules"] == "0/3"
    job = hint_job(kube)
    assert job["metadata"]["ownerReferences"][0]["name"] == NAME
    assert "ApplyingHints" in events.reasons()
    assert kube.get("ConfigMap", NS, f"{NAME}-shim") is None  # no selector: no shim config


def test_verified_hints_make_it_ready() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    job = answer(kube)
    st = step(kube, events)
    assert cond(st)["status"] == "True" and cond(st)["reason"] == "Applied"
    assert st["checks"] == 1 and st["hintsDigest"] and st["failedDigest"] == ""
    assert st["appliedRules"] == "3/3" and all(r["applied"] for r in st["rules"])
    results = next(r for r in st["rules"] if r["path"] == "/results")
    assert results["datafiles"] == 2  # explicit 2-D, g = 2: what a new file there gets
    assert "HintsApplied" in events.reasons()
    assert ("Job", NS, job) in kube.deleted  # released once the status holds what it found
    assert stored(kube)["hintsDigest"] == st["hintsDigest"]


def test_an_unchanged_policy_runs_no_job() -> None:
    kube, events = FakeKube(), Events()
    applied(kube, events)
    count, patches, posted = len(kube.applied), len(kube.status_patches), len(events.posted)
    st = step(kube, events)
    assert cond(st)["reason"] == "Applied" and st["checks"] == 1
    assert len(kube.applied) == count and kube.list("Job", NS, HINT_JOBS) == []
    assert len(kube.status_patches) == patches and len(events.posted) == posted


def test_a_changed_rule_is_applied_with_a_new_job() -> None:
    kube, events = FakeKube(), Events()
    applied(kube, events)
    digest = stored(kube)["hintsDigest"]
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    rules = body["spec"]["rules"]
    rules[0]["explicit"]["stripSize"] = 65536
    assert kube.custom.patch(LP, NS, NAME, {"spec": {"rules": rules}}) is not None
    st = step(kube, events)
    assert cond(st)["reason"] == "Applying" and st["observedGeneration"] == 2
    job = hint_job(kube)
    assert job["metadata"]["name"].endswith("-2")  # numbered by the check
    results = [x for x in hint_log(job).splitlines() if "/results\tuser.pvfs2.dist_params" in x]
    assert len(results) == 1 and "65536" in results[0] and "1048576" not in results[0]
    answer(kube)
    st = step(kube, events)
    assert st["hintsDigest"] != digest and st["checks"] == 2 and cond(st)["reason"] == "Applied"
    assert "HintsApplied" in events.reasons()[-2:]


def test_an_invalid_rule_is_named_and_the_others_applied() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    good = example("layoutpolicy.yaml", "LayoutPolicy")["spec"]["rules"][0]
    create(kube, [good, {"path": "/bad", "mode": "explicit", "explicit": {"layout": "2-D", "groups": 3}}])
    step(kube, events)
    assert "/bad" not in hint_job(kube)["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    answer(kube)
    st = step(kube, events)
    assert cond(st)["status"] == "False" and cond(st)["reason"] == "RuleInvalid"
    assert "spec.rules[1]" in cond(st)["message"]
    assert st["rules"][0]["applied"] is True and st["appliedRules"] == "1/2"


def test_a_failed_hint_job_says_why_and_is_retried_after_a_pause() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    job = answer(kube, ok=False, log="pfslayout-hints: /mnt/orangefs/results: cannot set user.pvfs2.num_dfiles\n")
    st = step(kube, events)
    assert cond(st)["reason"] == "HintJobFailed" and "cannot set user.pvfs2.num_dfiles" in cond(st)["message"]
    assert st["failedDigest"] and st["checks"] == 1 and "hintsDigest" not in st
    assert ("Job", NS, job) in kube.deleted
    # within the pause: no new Job, the reason kept
    count = len(kube.applied)
    st = step(kube, events)
    assert len(kube.applied) == count and cond(st)["reason"] == "HintJobFailed"
    assert "cannot set" in cond(st)["message"]


def test_hints_that_do_not_read_back_fail_the_check() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    job = hint_job(kube)
    log = "\n".join(x for x in hint_log(job).splitlines() if "/results\tuser.pvfs2.num_dfiles" not in x)
    answer(kube, log=log)
    st = step(kube, events)
    assert cond(st)["reason"] == "HintJobFailed"
    assert "hints did not take effect" in cond(st)["message"] and "user.pvfs2.num_dfiles not reported" in \
        cond(st)["message"]


def test_a_drift_check_that_rewrote_hints_is_recorded() -> None:
    kube, events = FakeKube(), Events()
    applied(kube, events)
    step(kube, events, recheck_s=0)  # the drift check is due
    answer(kube)  # its Job reports every hint as set: all had drifted
    st = step(kube, events, recheck_s=0)
    assert st["driftRepairs"] == 1 and st["lastDriftRepair"]["hints"]
    assert ("Warning", "DriftRepaired") in {(t, r) for t, r, _ in events.posted}
    assert cond(st)["reason"] == "Applied" and st["checks"] == 2


def test_an_object_being_deleted_or_gone_is_left_alone() -> None:
    kube, events = FakeKube(), Events()
    applied(kube, events)
    kube.objects[("LayoutPolicy", NS, NAME)]["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    count, patches = len(kube.applied), len(kube.status_patches)
    assert step(kube, events, recheck_s=0) == stored(kube)
    assert len(kube.applied) == count and len(kube.status_patches) == patches
    body = kube.custom.get(LP, NS, NAME)
    assert body is not None
    kube.custom.delete(LP, NS, NAME)
    assert rec.reconcile(context(kube, events, layout_recheck_s=RECHECK_S), body) == {}


def paged(log: str, directory: str, stale: int, scanned: int, cursor: str | None) -> str:
    """`log` with `directory`'s count line replaced by a page that stopped after `cursor` (None: the
    pass's last page, a count line with these figures)."""
    lines = [x for x in log.splitlines() if not (x.startswith(relayout.COUNT_MARK + "\t")
                                                 and x.split("\t")[1] == directory)]
    lines.append(f"{relayout.PAGE_MARK}\t{directory}\t{stale}\t{scanned}\t{cursor}" if cursor is not None
                 else f"{relayout.COUNT_MARK}\t{directory}\t{stale}\t{scanned}")
    return "\n".join(lines) + "\n"


def test_a_big_directory_is_scanned_in_pages_each_job_resuming_where_the_last_stopped() -> None:
    kube, events = FakeKube(), Events()
    applied(kube, events)
    step(kube, events, recheck_s=0)  # a drift check: its scan stops at its bound
    job = hint_job(kube)
    # the first rule's directory, as its scan reports it
    directory = next(x.split("\t")[1] for x in hint_log(job).splitlines() if x.startswith(relayout.COUNT_MARK))
    assert "--resume" not in job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    answer(kube, log=paged(hint_log(job), directory, 3, 20000, "sub/f19999"))
    st = step(kube, events, recheck_s=0)  # the check's outcome read (still due until it is recorded)
    files = st["rules"][0]["existingFiles"]
    assert files["scanning"]["after"] == "sub/f19999" and files["scanning"]["olderLayout"] == 3
    assert st["migrationPending"] and "olderLayout" in files  # the first pass's figures stay until this one ends
    step(kube, events)  # the next page's Job, resuming
    job = hint_job(kube)
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert f"--resume {directory} sub/f19999" in script
    answer(kube, log=paged(hint_log(job), directory, 2, 5000, None))
    st = step(kube, events)
    files = st["rules"][0]["existingFiles"]
    assert "scanning" not in files and (files["olderLayout"], files["scanned"]) == (5, 25000)
    assert not st["migrationPending"] and cond(st)["reason"] == "Applied"
    assert ("Normal", "OlderLayouts") in {(t, r) for t, r, _ in events.posted}


def test_the_shim_config_is_read_when_it_changes_or_a_drift_check_starts_not_at_every_reconcile() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    body = example("layoutpolicy.yaml", "LayoutPolicy")
    body["spec"]["selector"] = {"matchLabels": {"app": "sim"}}  # selected jobs: a shim ConfigMap
    assert kube.custom.create(LP, NS, body) is not None
    step(kube, events)
    answer(kube)
    st = step(kube, events)
    cm = naming.shim_configmap(NAME)
    assert kube.get("ConfigMap", NS, cm) is not None and st["shimConfigDigest"]
    kube.delete("ConfigMap", NS, cm)  # by hand
    step(kube, events)  # nothing changed, no check due: not looked at (an idle policy reads nothing)
    assert kube.get("ConfigMap", NS, cm) is None
    step(kube, events, recheck_s=0)  # the drift check's Job starts: the ConfigMap is read and restored
    assert kube.get("ConfigMap", NS, cm) is not None
