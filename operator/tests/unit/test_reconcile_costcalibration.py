"""The CostCalibration reconciler's decision paths driven through FakeKube (an in-memory stand-in for
the API server, pfstestkit/fakekube.py), on the user-facing example policies/costcalibration.yaml:
waiting for the cluster, a run started (measurements, hint Job), probe MPIJobs in batches, an unchanged
and a changed spec, refusals, a failed hint Job, a failed or unreadable probe job, every probe job
measured and the fit published (the cluster pointed at it), and an object being deleted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pfslayout import naming
from pfslayout.calibration import simulate_probe
from pfslayout.calibration.grid import GridCell, ProbeGrid
from pfslayout.costmodel import SEED_ETHERNET
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import MPIJOB
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.costcalibration import objects as objs
from pfslayout.kinds.costcalibration.probe_plan import make_plan
from pfslayout.kinds.costcalibration.spec import parse_spec
from pfslayout.operator.reconcilers import costcalibration as rec
from pfstestkit import fakekube
from pfstestkit.fakekube import Events, FakeKube, context, example, hint_log

NS = "team-a"
NAME = "probe-4"
MEASUREMENTS = naming.measurements_configmap(NAME)


def ready_cluster(kube: FakeKube) -> None:
    fakekube.ready_cluster(kube, "costcalibration.yaml", NS, NAME)


def create(kube: FakeKube, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    body = example("costcalibration.yaml", "CostCalibration")
    body["spec"].update(spec or {})
    made = kube.custom.create(CC, NS, body)
    assert made is not None
    return made


def step(kube: FakeKube, events: Events) -> dict[str, Any]:
    body = kube.custom.get(CC, NS, NAME)
    assert body is not None
    return rec.reconcile(context(kube, events), body)


def stored(kube: FakeKube) -> dict[str, Any]:
    body = kube.custom.get(CC, NS, NAME)
    assert body is not None
    return dict(body.get("status") or {})


def ready(st: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in st["conditions"] if c["type"] == "Ready")


def hint_job(kube: FakeKube) -> dict[str, Any]:
    jobs = kube.list("Job", NS, "app.kubernetes.io/component=hints")
    assert len(jobs) == 1
    return jobs[0]


def started(kube: FakeKube, events: Events) -> None:
    """A ready cluster, the CostCalibration created, its run started and its probe directories ready."""
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    job = hint_job(kube)
    kube.finish_job(NS, job["metadata"]["name"], ok=True, log=hint_log(job))
    step(kube, events)


def test_it_waits_for_a_missing_cluster_naming_the_field() -> None:
    kube, events = FakeKube(), Events()
    create(kube)
    st = step(kube, events)
    assert st["phase"] == "Pending" and stored(kube)["phase"] == "Pending"
    assert ready(st)["reason"] == "ClusterNotReady" and ready(st)["message"].startswith("spec.clusterRef.name")
    assert kube.applied == []
    assert "ClusterNotReady" in events.reasons()


def test_creation_starts_a_run_and_sets_the_probe_directories_hints() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    st = step(kube, events)
    assert st["phase"] == "Running" and st["run"] == 1 and st["measurementsConfigMap"] == MEASUREMENTS
    assert stored(kube)["jobs"]["succeeded"] == 0 and stored(kube)["observedGeneration"] == 1
    assert ready(stored(kube))["reason"] == "Probing"
    cm = kube.get("ConfigMap", NS, MEASUREMENTS)
    assert cm is not None and cm["metadata"]["annotations"][objs.RUN_ANNOTATION] == "1"
    job = hint_job(kube)
    assert job["metadata"]["ownerReferences"][0]["name"] == NAME
    assert kube.custom.list(MPIJOB, NS) == []  # no probe before the directories carry their hints
    assert events.reasons()[:2] == ["RunStarted", "PhaseRunning"]
    assert "SettingHints" in events.reasons()
    # the hint Job still running: nothing new
    applied = len(kube.applied)
    step(kube, events)
    assert len(kube.applied) == applied and hint_job(kube)["metadata"]["name"] == job["metadata"]["name"]


def test_verified_hints_start_the_probe_jobs_in_batches() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    assert kube.list("Job", NS, "app.kubernetes.io/component=hints") == []  # released once recorded
    cm = kube.get("ConfigMap", NS, MEASUREMENTS)
    assert cm is not None and json.loads(cm["data"][rec.HINTS_KEY])["directories"]
    assert "HintsApplied" in events.reasons()
    mpijobs = kube.custom.list(MPIJOB, NS)
    assert len(mpijobs) == 1  # batch.maxConcurrentJobs: 1
    assert mpijobs[0]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["image"] \
        == "pfslayout/mpi:dev"
    st = stored(kube)
    assert st["jobs"]["running"] == 1 and st["jobs"]["total"] > 1
    assert events.reasons().count("ProbeJobCreated") == 1


def test_an_unchanged_spec_applies_nothing_new() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    applied, patches, posted = len(kube.applied), len(kube.status_patches), len(events.posted)
    mpijobs = kube.custom.list(MPIJOB, NS)
    step(kube, events)
    assert len(kube.applied) == applied and len(kube.status_patches) == patches and len(events.posted) == posted
    assert kube.custom.list(MPIJOB, NS) == mpijobs


def test_a_spec_change_starts_the_next_run() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    old = kube.custom.list(MPIJOB, NS)[0]["metadata"]["name"]
    assert kube.custom.patch(CC, NS, NAME, {"spec": {"grid": {"repetitions": 2}}}) is not None
    st = step(kube, events)
    assert st["run"] == 2 and st["observedGeneration"] == 2
    assert (MPIJOB.kind, NS, old) in kube.deleted
    assert events.message("RunStarted").startswith("run 2:")
    cm = kube.get("ConfigMap", NS, MEASUREMENTS)
    assert cm is not None and cm["metadata"]["annotations"][objs.RUN_ANNOTATION] == "2"
    assert rec.HINTS_KEY not in cm["data"]  # a new run starts from nothing


@pytest.mark.parametrize(("spec", "reason", "field"), [
    ({"resources": {"limits": {"cpu": "1"}}}, "GridTooLarge", "spec.grid.ranksPerNode"),
    ({"grid": {"nodes": 0}}, "InvalidSpec", "spec.grid.nodes"),
])
def test_a_refused_spec_fails_naming_the_field_and_applies_nothing(spec: dict[str, Any], reason: str,
                                                                   field: str) -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    applied = len(kube.applied)
    create(kube, spec)
    st = step(kube, events)
    assert st["phase"] == "Failed"
    assert ready(st)["reason"] == reason and field in ready(st)["message"]
    assert len(kube.applied) == applied and kube.custom.list(MPIJOB, NS) == []
    assert ("Warning", "PhaseFailed") in {(t, r) for t, r, _ in events.posted}


def test_a_failed_hint_job_fails_the_run_with_its_log() -> None:
    kube, events = FakeKube(), Events()
    ready_cluster(kube)
    create(kube)
    step(kube, events)
    job = hint_job(kube)["metadata"]["name"]
    kube.finish_job(NS, job, ok=False, log="pfslayout-hints: /mnt/orangefs/x: cannot create the directory\n")
    st = step(kube, events)
    assert st["phase"] == "Failed" and ready(st)["reason"] == "ProbeFailed"
    message = ready(st)["message"]
    assert message.startswith("probe directories: HintsNotApplied:") and "cannot create the directory" in message
    assert ("Job", NS, job) in kube.deleted
    cm = kube.get("ConfigMap", NS, MEASUREMENTS)
    assert cm is not None and json.loads(cm["data"][rec.FAILED_KEY])["reason"] == "HintsNotApplied"
    assert kube.custom.list(MPIJOB, NS) == []
    # over: the next reconcile of the same spec changes nothing
    applied = len(kube.applied)
    assert step(kube, events)["phase"] == "Failed" and len(kube.applied) == applied


def test_a_failed_probe_job_fails_the_run_with_the_launcher_log() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    name = kube.custom.list(MPIJOB, NS)[0]["metadata"]["name"]
    kube.finish_mpijob(NS, name, ok=False, log="pfsprobe: open failed: Permission denied\n",
                       message="launcher exited 1")
    st = step(kube, events)
    assert st["phase"] == "Failed" and ready(st)["reason"] == "ProbeFailed"
    message = ready(st)["message"]
    assert message.startswith(f"probe job 1/{st['jobs']['total']}: MPIJobFailed: MPIJob {name}: launcher exited 1")
    assert "Permission denied" in message
    assert st["jobs"]["failed"] == 1 and kube.custom.list(MPIJOB, NS) == []


def test_a_probe_job_without_documents_fails_the_run() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    name = kube.custom.list(MPIJOB, NS)[0]["metadata"]["name"]
    kube.finish_mpijob(NS, name, ok=True, log="no documents here\n")
    st = step(kube, events)
    assert ready(st)["reason"] == "ProbeFailed" and "ProbeOutputInvalid" in ready(st)["message"]
    assert "no documents here" in ready(st)["message"]


def test_an_object_being_deleted_or_gone_is_left_alone() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    kube.objects[("CostCalibration", NS, NAME)]["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    applied, patches = len(kube.applied), len(kube.status_patches)
    assert step(kube, events) == stored(kube)
    assert len(kube.applied) == applied and len(kube.status_patches) == patches
    body = kube.custom.get(CC, NS, NAME)
    assert body is not None
    kube.custom.delete(CC, NS, NAME)
    assert rec.reconcile(context(kube, events), body) == {}


def probe_log(kube: FakeKube, mpijob: dict[str, Any]) -> str:
    """What the probe job's launcher prints on a platform that follows the seeds' model exactly: one
    pfsprobe/1 document per invocation of the job, between the markers (synthetic: calibration/synthetic.py)."""
    body = kube.custom.get(CC, NS, NAME)
    assert body is not None
    ofs = kube.custom.get(OFS, NS, NAME)
    assert ofs is not None
    urls = [s["url"] for s in ofs["status"]["endpoints"]["servers"]]
    plan = make_plan(parse_spec(body["spec"]), NAME, 4, "/mnt/orangefs", urls)
    job = plan.jobs[int(mpijob["metadata"]["labels"][objs.JOB_LABEL])]
    out = []
    for inv in job.invocations:
        plat = inv.grid["platform"]
        grid = ProbeGrid(plat["servers"], plat["nodes"], plat["ranks_per_node"],
                         [GridCell(**c) for c in inv.grid["cells"]], design=None)  # type: ignore[arg-type]
        doc = simulate_probe(grid, SEED_ETHERNET, noise=0.0)
        out += [f"{objs.BEGIN} {inv.key}", json.dumps(doc), f"{objs.END} {inv.key}"]
    return "\n".join(out) + "\n"


def test_every_probe_job_measured_publishes_the_fit_and_points_the_cluster_at_it() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    for i in range(50):  # one probe job at a time (batch.maxConcurrentJobs: 1)
        running = kube.custom.list(MPIJOB, NS)
        if not running:
            break
        assert len(running) == 1
        # the scheduler spread the first job's workers over two nodes, every later one over a third and one
        # of those: three client nodes in all
        nodes = ("node-a", "node-b") if i == 0 else ("node-b", "node-c")
        kube.finish_mpijob(NS, running[0]["metadata"]["name"], ok=True, log=probe_log(kube, running[0]),
                           worker_nodes=nodes)
        st = step(kube, events)
    assert st["phase"] == "Succeeded" and ready(st)["status"] == "True", ready(st)
    assert st["fit"]["clientNodes"] == (3 if i > 1 else 2), st["fit"]
    assert st["jobs"]["succeeded"] == st["jobs"]["total"] and st["cells"]["progress"].split("/")[0] == \
        st["cells"]["progress"].split("/")[1]
    for p in ("e", "alpha_seq", "beta"):  # the model the synthetic platform follows, recovered
        assert st["params"][p] == pytest.approx(getattr(SEED_ETHERNET, p), rel=0.05), (p, st["params"])
    cm = kube.get("ConfigMap", NS, st["configMapName"])
    assert cm is not None and json.loads(cm["data"]["params.json"])["e"] == pytest.approx(st["params"]["e"])
    assert st["history"][0]["run"] == st["run"] and st["completionTime"]
    ofs = kube.custom.get(OFS, NS, NAME)
    assert ofs is not None and ofs["status"]["calibrationRef"]["name"] == NAME
    assert ofs["status"]["calibrationRef"]["configMapName"] == st["configMapName"]
    assert {"ProbeJobSucceeded", "CalibrationCurrent"} <= set(events.reasons())
    assert kube.custom.list(MPIJOB, NS) == []  # each deleted once its documents were saved
    again = step(kube, events)  # the run is over: nothing new
    assert again["run"] == st["run"] and kube.custom.list(MPIJOB, NS) == []


def test_a_second_calibration_queues_until_the_first_has_probed() -> None:
    """Calibrations probe one at a time (probe_slot.py): a second one on the platform, its probe directories
    ready, waits with reason Queued naming the first and creates no probe job; it starts once the first
    has published, and the first never yields between two of its own jobs."""
    kube, events = FakeKube(), Events()
    started(kube, events)
    other = "probe-4-again"
    body = example("costcalibration.yaml", "CostCalibration")
    body["metadata"]["name"] = other
    assert kube.custom.create(CC, NS, body) is not None

    def step_other(**settings: Any) -> dict[str, Any]:
        found = kube.custom.get(CC, NS, other)
        assert found is not None
        return rec.reconcile(context(kube, events, **settings), found)

    step_other()
    job = hint_job(kube)
    kube.finish_job(NS, job["metadata"]["name"], ok=True, log=hint_log(job))
    queued = step_other()
    assert queued["phase"] == "Running" and ready(queued)["reason"] == "Queued", ready(queued)
    assert f"waiting for CostCalibration {NS}/{NAME} to finish probing" in ready(queued)["message"]
    assert kube.custom.list(MPIJOB, NS, f"{objs.CALIBRATION_LABEL}={other}") == []
    assert "Queued" in events.reasons()
    for _ in range(50):  # the first runs every job, one after the other, while the second waits
        running = kube.custom.list(MPIJOB, NS, f"{objs.CALIBRATION_LABEL}={NAME}")
        if not running:
            break
        kube.finish_mpijob(NS, running[0]["metadata"]["name"], ok=True, log=probe_log(kube, running[0]))
        st = step(kube, events)
        if st["phase"] != "Succeeded":
            assert ready(step_other())["reason"] == "Queued"
    assert st["phase"] == "Succeeded"
    going = step_other()
    assert ready(going)["reason"] == "Probing", ready(going)
    assert len(kube.custom.list(MPIJOB, NS, f"{objs.CALIBRATION_LABEL}={other}")) == 1


def test_concurrent_probing_lets_a_second_calibration_probe_at_once() -> None:
    kube, events = FakeKube(), Events()
    started(kube, events)
    body = example("costcalibration.yaml", "CostCalibration")
    body["metadata"]["name"] = "probe-4-again"
    assert kube.custom.create(CC, NS, body) is not None
    for _ in range(2):
        found = kube.custom.get(CC, NS, "probe-4-again")
        assert found is not None
        st = rec.reconcile(context(kube, events, calibration_probing="concurrent"), found)
        if (jobs := kube.list("Job", NS, "app.kubernetes.io/component=hints")):
            kube.finish_job(NS, jobs[0]["metadata"]["name"], ok=True, log=hint_log(jobs[0]))
    assert ready(st)["reason"] == "Probing"
    assert len(kube.custom.list(MPIJOB, NS, f"{objs.CALIBRATION_LABEL}=probe-4-again")) == 1
    assert len(kube.custom.list(MPIJOB, NS, f"{objs.CALIBRATION_LABEL}={NAME}")) == 1


def calibrated(kube: FakeKube, events: Events, owned: bool = False) -> dict[str, Any]:
    """The example calibrated to Succeeded on its 4-server cluster; `owned`: as the cluster's automatic
    calibration (its controller owner reference), else as a user made it."""
    ready_cluster(kube)
    body = example("costcalibration.yaml", "CostCalibration")
    if owned:
        ofs = kube.custom.get(OFS, NS, NAME)
        assert ofs is not None
        body["metadata"]["ownerReferences"] = [{"apiVersion": OFS.api_version, "kind": OFS.kind, "name": NAME,
                                                "uid": ofs["metadata"]["uid"], "controller": True}]
    assert kube.custom.create(CC, NS, body) is not None
    step(kube, events)
    job = hint_job(kube)
    kube.finish_job(NS, job["metadata"]["name"], ok=True, log=hint_log(job))
    st = step(kube, events)
    for _ in range(50):
        running = kube.custom.list(MPIJOB, NS)
        if not running:
            break
        kube.finish_mpijob(NS, running[0]["metadata"]["name"], ok=True, log=probe_log(kube, running[0]),
                           worker_nodes=("node-a", "node-b"))
        st = step(kube, events)
    assert st["phase"] == "Succeeded" and st["servers"] == 4, st
    return st


def scale(kube: FakeKube, servers: int) -> None:
    """The cluster's spec scaled and rolled out to Ready again by its own reconciler."""
    assert kube.custom.patch(OFS, NS, NAME, {"spec": {"servers": {"count": servers}}}) is not None
    status = fakekube.roll_out_cluster(kube, NS, NAME)
    assert status["phase"] == "Ready" and status["servers"] == servers, status


def test_a_scaled_cluster_runs_its_automatic_calibration_again() -> None:
    kube, events = FakeKube(), Events()
    first = calibrated(kube, events, owned=True)
    assert step(kube, events)["run"] == first["run"]  # unchanged cluster: nothing new
    scale(kube, 6)
    st = step(kube, events)
    assert st["run"] == first["run"] + 1 and st["phase"] == "Running" and st["servers"] == 6, st
    assert "ServersChanged" in events.reasons()
    assert "measured 4 servers; OrangeFSCluster probe-4 now has 6" in events.message("ServersChanged")
    assert not any(c["type"] == "Stale" for c in st["conditions"])


def test_a_scaled_cluster_marks_a_users_calibration_stale_until_it_is_run_again() -> None:
    kube, events = FakeKube(), Events()
    first = calibrated(kube, events)
    scale(kube, 6)
    st = step(kube, events)
    assert st["run"] == first["run"] and st["phase"] == "Succeeded", st  # the user's to re-run
    (stale,) = [c for c in st["conditions"] if c["type"] == "Stale"]
    assert stale["status"] == "True" and stale["reason"] == "ServersChanged"
    assert "measured 4 servers" in stale["message"] and "now has 6" in stale["message"]
    assert "pfslayout.io/recalibrate" in stale["message"]  # the fix
    assert ready(st)["status"] == "True"  # the parameters are still there to use, and flagged
    assert events.reasons().count("Stale") == 1
    again = step(kube, events)
    assert again["conditions"] == st["conditions"] and events.reasons().count("Stale") == 1  # said once
    # (OrangeFS cannot lose servers, so the cluster does not scale back.) The user re-runs it:
    kube.custom.patch(CC, NS, NAME, {"metadata": {"annotations": {objs.RECALIBRATE_ANNOTATION: "after-scaling"}}})
    rerun = step(kube, events)
    assert rerun["run"] == first["run"] + 1 and rerun["servers"] == 6, rerun
    assert not any(c["type"] == "Stale" for c in rerun["conditions"]), rerun["conditions"]
