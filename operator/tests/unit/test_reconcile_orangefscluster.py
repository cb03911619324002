"""The OrangeFSCluster reconciler's decision paths driven through FakeKube (an in-memory stand-in for
the API server, pfstestkit/fakekube.py): creation, rollout to Ready, an unchanged and a changed spec, refusals,
an invalid spec, and deletion (mark_terminating, wipe_hostpath). The e2e tier runs the same paths on a
real API server."""

from __future__ import annotations

from typing import Any

import pytest

from pfslayout import naming
from pfslayout.errors import InputError
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.operator.reconcilers import orangefscluster as rec
from pfstestkit.fakekube import Events, FakeKube, context, example

NS = "team-a"
STS = naming.server_statefulset("small")


def status(kube: FakeKube, name: str = "small") -> dict[str, Any]:
    obj = kube.custom.get(OFS, NS, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def condition(st: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in st["conditions"] if c["type"] == type_)


def create(kube: FakeKube, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    body = example("orangefs-small.yaml", "OrangeFSCluster")
    body["spec"].update(spec or {})
    made = kube.custom.create(OFS, NS, body)
    assert made is not None
    return made


def fresh(kube: FakeKube, name: str = "small") -> dict[str, Any]:
    obj = kube.custom.get(OFS, NS, name)
    assert obj is not None
    return obj


def edit(kube: FakeKube, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    patched = kube.custom.patch(OFS, NS, "small", {"spec": spec, "metadata": {"annotations": annotations or {}}})
    assert patched is not None
    return patched


def test_creation_applies_the_children_writes_the_status_and_posts_events() -> None:
    kube, events = FakeKube(), Events()
    body = create(kube)
    out = rec.reconcile(context(kube, events), body)
    assert {(k, n, a) for k, n, a in out.changes} == {
        ("ConfigMap", naming.fs_conf_configmap("small"), "created"),
        ("ConfigMap", naming.pvfs2tab_configmap("small"), "created"),
        ("Service", naming.server_service("small"), "created"),
        ("StatefulSet", STS, "created"),
        ("Deployment", naming.client_deployment("small"), "created")}
    sts = kube.get("StatefulSet", NS, STS)
    assert sts is not None and sts["spec"]["replicas"] == 2
    assert sts["metadata"]["ownerReferences"][0]["uid"] == body["metadata"]["uid"]
    st = status(kube)
    assert st["phase"] == "Provisioning" and st["servers"] == 2 and st["readyServers"] == 0
    assert st["observedGeneration"] == 1 and "fsId" in st
    assert len(st["endpoints"]["servers"]) == 2
    assert condition(st, "SpecApplied")["status"] == "True"
    assert events.reasons().count("Created") == 5
    assert "PhaseProvisioning" in events.reasons()
    assert kube.of_kind("CostCalibration") == []  # not Ready yet: no calibration


def test_ready_servers_make_it_ready_and_create_its_calibration_once() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    kube.roll_out(NS, STS, ready=1)
    assert rec.refresh_status(context(kube, events), fresh(kube)) is not None
    assert status(kube)["phase"] == "Provisioning" and status(kube)["readyServers"] == 1
    kube.roll_out(NS, STS)
    st = rec.refresh_status(context(kube, events), fresh(kube))
    assert st is not None and st["phase"] == "Ready" and st["readyServers"] == 2
    assert condition(status(kube), "Ready")["reason"] == "AllServersReady"
    assert all(s["ready"] for s in status(kube)["endpoints"]["servers"])
    assert "PhaseReady" in events.reasons()
    cc = kube.custom.get(CC, NS, "small-calibration")
    assert cc is not None and cc["spec"]["clusterRef"] == {"name": "small"}
    assert status(kube)["calibrationRef"] == {"name": "small-calibration"}
    assert events.reasons().count("CalibrationCreated") == 1
    # nothing moved: no Event, no second calibration
    posted = len(events.posted)
    rec.refresh_status(context(kube, events), fresh(kube))
    assert len(events.posted) == posted and len(kube.of_kind("CostCalibration")) == 1


def test_losing_a_server_degrades_a_ready_cluster() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube, {"calibration": {"auto": False}}))
    kube.roll_out(NS, STS)
    rec.refresh_status(context(kube, events), fresh(kube))
    kube.roll_out(NS, STS, ready=1)
    rec.refresh_status(context(kube, events), fresh(kube))
    st = status(kube)
    assert st["phase"] == "Degraded" and condition(st, "Ready")["reason"] == "ServersNotReady"
    assert ("Warning", "PhaseDegraded") in {(t, r) for t, r, _ in events.posted}
    assert kube.of_kind("CostCalibration") == []  # calibration.auto: false


def test_an_unchanged_spec_applies_nothing_new() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    versions = {k: o["metadata"]["resourceVersion"] for k, o in kube.objects.items() if k[0] != "OrangeFSCluster"}
    posted = len(events.posted)
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert out.changes == ()
    assert {k: o["metadata"]["resourceVersion"] for k, o in kube.objects.items() if k[0] != "OrangeFSCluster"} \
        == versions
    assert len(events.posted) == posted  # no Created/Updated, no transition


def test_a_spec_change_is_applied_and_a_scale_up_reported() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    edit(kube, {"servers": {"count": 3}})
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert ("StatefulSet", STS, "updated") in out.changes
    sts = kube.get("StatefulSet", NS, STS)
    assert sts is not None and sts["spec"]["replicas"] == 3 and sts["metadata"]["generation"] == 2
    assert events.message("Scaled") == "servers 2 -> 3"
    st = status(kube)
    assert st["servers"] == 3 and st["observedGeneration"] == 2


def test_a_client_turned_off_is_deleted() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    edit(kube, {"client": {"enabled": False}})
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert ("Deployment", naming.client_deployment("small"), "deleted") in out.changes
    assert kube.get("Deployment", NS, naming.client_deployment("small")) is None


@pytest.mark.parametrize(("spec", "annotations", "reason", "field"), [
    ({"servers": {"count": 1}}, {}, "ScaleDownRefused", "spec.servers"),
    ({"servers": {"count": 1}}, {"pfslayout.io/confirm-scale-down": "3"}, "ScaleDownRefused", "spec.servers"),
    ({"fs": {"name": "other"}}, {}, "ImmutableFieldChanged", "spec.fs.name"),
])
def test_a_refused_change_applies_nothing_and_says_which_field(spec: dict[str, Any], annotations: dict[str, str],
                                                               reason: str, field: str) -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    kube.roll_out(NS, STS)
    applied = len(kube.applied)
    edit(kube, spec, annotations)
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert out.changes == () and len(kube.applied) == applied  # never half way
    sts = kube.get("StatefulSet", NS, STS)
    assert sts is not None and sts["spec"]["replicas"] == 2
    st = status(kube)
    cond = condition(st, "SpecApplied")
    assert cond["status"] == "False" and cond["reason"] == reason and cond["message"].startswith(field)
    assert st["phase"] == "Degraded" and st["servers"] == 2
    assert ("Warning", reason) in {(t, r) for t, r, _ in events.posted}


def test_a_scale_down_with_consent_is_applied() -> None:
    kube, events = FakeKube(), Events()
    rec.reconcile(context(kube, events), create(kube))
    edit(kube, {"servers": {"count": 1}}, {"pfslayout.io/confirm-scale-down": "1"})
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert ("StatefulSet", STS, "updated") in out.changes
    assert events.message("Scaled") == "servers 2 -> 1"


def test_an_invalid_spec_fails_naming_the_field_and_applies_nothing() -> None:
    kube, events = FakeKube(), Events()
    body = create(kube, {"servers": {"count": 0}})
    with pytest.raises(InputError):
        rec.reconcile(context(kube, events), body)
    assert kube.applied == []
    st = status(kube)
    assert st["phase"] == "Failed"
    ready = condition(st, "Ready")
    assert ready["reason"] == "InvalidSpec" and "spec.servers.count" in ready["message"]
    assert ("Warning", "PhaseFailed") in {(t, r) for t, r, _ in events.posted}
    assert rec.refresh_status(context(kube, events), fresh(kube)) is None  # the reconcile handler reports it


def test_a_namesake_or_deleted_object_is_not_refreshed() -> None:
    kube, events = FakeKube(), Events()
    body = create(kube)
    rec.reconcile(context(kube, events), body)
    assert rec.refresh_status(context(kube, events), {**body, "metadata": {**body["metadata"], "uid": "other"}}) is None
    kube.custom.delete(OFS, NS, "small")
    assert rec.refresh_status(context(kube, events), body) is None


@pytest.mark.parametrize(("spec", "note"), [
    ({}, "emptyDir storage goes with the pods"),
    ({"storage": {"type": "pvc", "size": "1Gi"}}, "reclaimPolicy Retain: keeping 2 claims"),
    ({"storage": {"type": "pvc", "size": "1Gi"}, "reclaimPolicy": "Delete"},
     "reclaimPolicy Delete: the StatefulSet controller deletes 2 claims"),
    ({"storage": {"type": "hostPath", "hostPath": {"path": "/data"}}, "reclaimPolicy": "Delete"},
     "reclaimPolicy Delete: wipe Jobs remove"),
])
def test_deletion_marks_it_terminating_and_says_what_happens_to_the_data(spec: dict[str, Any], note: str) -> None:
    kube, events = FakeKube(), Events()
    body = create(kube, spec)
    rec.reconcile(context(kube, events), body)
    for i in range(2):
        kube.put({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": {"name": f"storage-{STS}-{i}", "namespace": NS,
                               "labels": kube.objects[("StatefulSet", NS, STS)]["spec"]["template"]["metadata"][
                                   "labels"]}})
    notes = rec.mark_terminating(context(kube, events), fresh(kube))
    assert len(notes) == 1 and notes[0].startswith(note)
    assert status(kube)["phase"] == "Terminating"
    assert events.message("Deleting") == notes[0]
    assert "PhaseTerminating" in events.reasons()


def test_wipe_hostpath_stops_the_servers_then_runs_one_job_per_node() -> None:
    kube, events = FakeKube(), Events()
    body = create(kube, {"storage": {"type": "hostPath", "hostPath": {"path": "/data"}}, "reclaimPolicy": "Delete"})
    rec.reconcile(context(kube, events), body)
    pods = kube.roll_out(NS, STS, node="node-1")
    body = fresh(kube)
    with pytest.raises(rec.Waiting, match="stopping the servers"):
        rec.wipe_hostpath(context(kube, events), body, elapsed_s=1)
    jobs = kube.list("Job", NS, "")
    assert [j["metadata"]["name"] for j in jobs] == ["small-wipe-0", "small-wipe-1"]
    assert all(j["spec"]["suspend"] is True and j["spec"]["template"]["spec"]["nodeName"] == "node-1" for j in jobs)
    assert events.reasons().count("WipeScheduled") == 2
    assert ("StatefulSet", NS, STS) in kube.deleted
    with pytest.raises(rec.Waiting, match="2 server pods still stopping"):
        rec.wipe_hostpath(context(kube, events), body, elapsed_s=2)
    for pod in pods:  # the StatefulSet controller's work
        kube.delete("Pod", NS, pod)
    with pytest.raises(rec.Waiting, match="wipe Jobs running"):
        rec.wipe_hostpath(context(kube, events), body, elapsed_s=3)
    assert all(j["spec"]["suspend"] is False for j in kube.list("Job", NS, ""))
    kube.finish_job(NS, "small-wipe-0", ok=True)
    kube.finish_job(NS, "small-wipe-1", ok=False)
    notes = rec.wipe_hostpath(context(kube, events), body, elapsed_s=4)
    assert notes == ["wiped by ['small-wipe-0']", "failed: ['small-wipe-1']"]
    assert ("Warning", "WipeFailed") in {(t, r) for t, r, _ in events.posted}
    assert "small-wipe-0" in events.message("StorageWiped")


def test_wipe_hostpath_gives_up_after_its_deadline_and_skips_other_storage() -> None:
    kube, events = FakeKube(), Events()
    body = create(kube, {"storage": {"type": "hostPath", "hostPath": {"path": "/data"}}, "reclaimPolicy": "Delete"})
    rec.reconcile(context(kube, events), body)
    kube.roll_out(NS, STS, node="node-1")
    late = rec.WIPE_DEADLINE_S + 1
    assert rec.wipe_hostpath(context(kube, events), fresh(kube), elapsed_s=late) == ["wipe timed out"]
    assert ("Warning", "WipeTimedOut") in {(t, r) for t, r, _ in events.posted}
    kept = FakeKube()
    retained = create(kept, {"storage": {"type": "hostPath", "hostPath": {"path": "/data"}}})
    assert rec.wipe_hostpath(context(kept, Events()), retained, elapsed_s=1) == []
    assert kept.applied == []
