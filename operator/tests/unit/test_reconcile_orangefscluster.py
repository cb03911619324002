"""The OrangeFSCluster reconciler's decision paths driven through FakeKube (an in-memory stand-in for
the API server, pfstestkit/fakekube.py): creation, rollout to Ready, an unchanged and a changed spec, refusals,
an invalid spec, and deletion (mark_terminating, wipe_hostpath). The e2e tier runs the same paths on a
real API server."""

from __future__ import annotations

import copy
import json
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


# ------------------------------------------------------------------------------------------ placement

def spread_condition(st: dict[str, Any]) -> dict[str, Any]:
    return condition(st, "ServersSpread")


def pod_affinity(kube: FakeKube) -> dict[str, Any]:
    sts = kube.get("StatefulSet", NS, STS)
    assert sts is not None
    return dict(sts["spec"]["template"]["spec"].get("affinity") or {})


def test_required_over_more_servers_than_nodes_says_so_instead_of_a_silent_pending() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2", "n3"):
        kube.add_node(name)
    kube.add_node("fake", taints=[{"key": "pfslayout.io/fake-node", "value": "true", "effect": "NoSchedule"}])
    rec.reconcile(context(kube, events), create(kube, {"servers": {"count": 4, "spread": "Required"}}))
    assert list(pod_affinity(kube)["podAntiAffinity"]) == ["requiredDuringSchedulingIgnoredDuringExecution"]
    st: dict[str, Any] | None = status(kube)
    assert st is not None
    cond = spread_condition(st)
    assert cond["status"] == "False" and cond["reason"] == "NotEnoughNodes"
    assert cond["message"].startswith("servers.spread is Required: 4 servers need 4 distinct nodes, 3 nodes match")
    assert ("Warning", "NotEnoughNodes") in {(t, r) for t, r, _ in events.posted}
    assert st["phase"] == "Provisioning" and st["placement"]["eligibleNodes"] == 3
    # the scheduler places three, one stays Pending: still the same condition, no second Event
    kube.roll_out(NS, STS, nodes=["n1", "n2", "n3", ""])
    st = rec.refresh_status(context(kube, events), fresh(kube))
    assert st is not None and spread_condition(st)["reason"] == "NotEnoughNodes"
    assert [x["node"] for x in st["placement"]["servers"]] == ["n1", "n2", "n3", ""]
    assert [r for _, r, _ in events.posted].count("NotEnoughNodes") == 1
    # a fourth node joins: the waiting server's refusal is the scheduler's until it retries
    kube.add_node("n4")
    st = rec.refresh_status(context(kube, events), fresh(kube))
    assert st is not None and spread_condition(st)["reason"] == "Unschedulable"
    kube.roll_out(NS, STS, nodes=["n1", "n2", "n3", "n4"])
    st = rec.refresh_status(context(kube, events), fresh(kube))
    assert st is not None and st["phase"] == "Ready"
    assert (spread_condition(st)["status"], spread_condition(st)["reason"]) == ("True", "Distinct")


def test_auto_spreads_when_nodes_suffice_and_a_lost_node_restarts_nothing() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2", "n3"):
        kube.add_node(name)
    rec.reconcile(context(kube, events), create(kube))  # 2 servers, Auto
    assert list(pod_affinity(kube)["podAntiAffinity"]) == ["requiredDuringSchedulingIgnoredDuringExecution"]
    assert status(kube)["placement"]["spread"] == "Required"
    kube.delete("Node", "", "n2")
    kube.delete("Node", "", "n3")
    out = rec.reconcile(context(kube, events), fresh(kube))
    assert out.changes == ()  # the pod template stays: no rolling restart
    placed = status(kube)["placement"]
    assert placed["spread"] == "Required" and placed["eligibleNodes"] == 1
    # a change of what Auto depends on resolves it again, against the nodes there are now
    edit(kube, {"servers": {"count": 3}})
    rec.reconcile(context(kube, events), fresh(kube))
    assert list(pod_affinity(kube)["podAntiAffinity"]) == ["preferredDuringSchedulingIgnoredDuringExecution"]
    assert status(kube)["placement"]["spread"] == "Preferred"


def test_a_node_that_stops_reporting_is_named_with_its_servers_and_the_cluster_recovers_alone() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2"):
        kube.add_node(name)
    rec.reconcile(context(kube, events), create(kube))  # 2 servers
    kube.roll_out(NS, STS, nodes=["n1", "n2"])
    rec.refresh_status(context(kube, events), fresh(kube))
    st = status(kube)
    assert st["phase"] == "Ready" and condition(st, "NodesReady")["status"] == "True", st
    # n2's kubelet goes silent: the node controller marks it Unknown and its pods not Ready
    kube.add_node("n2", ready=False)
    kube.roll_out(NS, STS, ready=1, nodes=["n1", "n2"])
    rec.refresh_status(context(kube, events), fresh(kube))
    st = status(kube)
    lost = condition(st, "NodesReady")
    assert st["phase"] == "Degraded" and lost["status"] == "False" and lost["reason"] == "NodeNotReady", st
    assert f"n2 (server {STS}-1 on it) not Ready" in lost["message"], lost
    assert condition(st, "Ready")["reason"] == "NodeNotReady" and "n2" in condition(st, "Ready")["message"]
    assert any(t == "Warning" and r == "NodeNotReady" and "n2" in m for t, r, m in events.posted), events.posted
    # the node back, its server Ready: Ready again without anyone's help
    kube.add_node("n2")
    kube.roll_out(NS, STS, nodes=["n1", "n2"])
    rec.refresh_status(context(kube, events), fresh(kube))
    st = status(kube)
    assert st["phase"] == "Ready" and condition(st, "NodesReady")["status"] == "True", st


def test_servers_an_older_operator_placed_keep_their_template() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2"):
        kube.add_node(name)
    body = create(kube)
    rec.reconcile(context(kube, events), body)
    sts = kube.objects[("StatefulSet", NS, STS)]
    record = json.loads(sts["metadata"]["annotations"]["pfslayout.io/applied"])
    for key in ("spread", "spreadBasis"):  # as the operator before servers.spread stamped it
        del record[key]
    sts["metadata"]["annotations"]["pfslayout.io/applied"] = json.dumps(record)
    del sts["spec"]["template"]["spec"]["affinity"]
    template = copy.deepcopy(sts["spec"]["template"])
    rec.reconcile(context(kube, events), fresh(kube))
    after = kube.objects[("StatefulSet", NS, STS)]
    assert after["spec"]["template"] == template  # no restart for the upgrade
    assert "spreadBasis" in json.loads(after["metadata"]["annotations"]["pfslayout.io/applied"])
    assert "spread" not in status(kube)["placement"]


HOSTPATH = {"storage": {"type": "hostPath", "hostPath": {"path": "/data"}}, "reclaimPolicy": "Delete"}


def volume_nodes(kube: FakeKube) -> dict[str, str]:
    return {pv["metadata"]["name"]: pv["metadata"]["annotations"]["pfslayout.io/node"]
            for pv in kube.list("PersistentVolume", "", "")}


def test_hostpath_servers_get_a_volume_on_a_node_each_and_keep_it() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2", "n3"):
        kube.add_node(name)
    out = rec.reconcile(context(kube, events), create(kube, HOSTPATH))
    assert {(n, a) for k, n, a in out.changes if k == "PersistentVolume"} == {
        ("pfslayout.team-a.small.server-0", "created"), ("pfslayout.team-a.small.server-1", "created")}
    assert volume_nodes(kube) == {"pfslayout.team-a.small.server-0": "n1", "pfslayout.team-a.small.server-1": "n2"}
    pv = kube.get("PersistentVolume", "", "pfslayout.team-a.small.server-1")
    assert pv is not None and pv["spec"]["claimRef"]["name"] == f"storage-{STS}-1"
    assert pv["spec"]["claimRef"]["namespace"] == NS
    # the PV controller binds them: it writes the claim's uid into claimRef, which a second apply would
    # replace whole (server-side apply treats claimRef as atomic) and so unbind the claim
    bound = kube.objects[("PersistentVolume", "", "pfslayout.team-a.small.server-0")]
    bound["spec"]["claimRef"]["uid"] = "claim-uid-0"
    version = bound["metadata"]["resourceVersion"]
    # nodes come and go: no volume moves (its data is there); added servers take the least busy nodes
    kube.delete("Node", "", "n1")
    kube.add_node("n0")
    edit(kube, {"servers": {"count": 4}})
    applied = len(kube.applied)
    rec.reconcile(context(kube, events), fresh(kube))
    assert sorted(o["metadata"]["name"] for o in kube.applied[applied:] if o["kind"] == "PersistentVolume") == [
        "pfslayout.team-a.small.server-2", "pfslayout.team-a.small.server-3"]  # only the new ones
    bound = kube.objects[("PersistentVolume", "", "pfslayout.team-a.small.server-0")]
    assert bound["metadata"]["resourceVersion"] == version and bound["spec"]["claimRef"]["uid"] == "claim-uid-0"
    assert volume_nodes(kube) == {"pfslayout.team-a.small.server-0": "n1", "pfslayout.team-a.small.server-1": "n2",
                                  "pfslayout.team-a.small.server-2": "n0", "pfslayout.team-a.small.server-3": "n3"}


def test_hostpath_deletion_wipes_on_the_volumes_nodes_and_deletes_the_volumes() -> None:
    kube, events = FakeKube(), Events()
    for name in ("n1", "n2"):
        kube.add_node(name)
    rec.reconcile(context(kube, events), create(kube, HOSTPATH))
    pods = kube.roll_out(NS, STS, nodes=["n1", ""])  # server 1 never got to run: its data is still on n2
    body = fresh(kube)
    with pytest.raises(rec.Waiting, match="stopping the servers"):
        rec.wipe_hostpath(context(kube, events), body, elapsed_s=1)
    jobs = {j["metadata"]["name"]: j["spec"]["template"]["spec"]["nodeName"] for j in kube.list("Job", NS, "")}
    assert jobs == {"small-wipe-0": "n1", "small-wipe-1": "n2"}
    for pod in pods:
        kube.delete("Pod", NS, pod)
    assert rec.release_volumes(context(kube, events), body) == [
        "deleted PersistentVolumes ['pfslayout.team-a.small.server-0', 'pfslayout.team-a.small.server-1']"]
    assert kube.list("PersistentVolume", "", "") == [] and "VolumesDeleted" in events.reasons()
    assert rec.release_volumes(context(kube, events), body) == []  # nothing left: nothing to say


def test_release_volumes_leaves_other_clusters_volumes() -> None:
    kube, events = FakeKube(), Events()
    kube.add_node("n1")
    rec.reconcile(context(kube, events), create(kube, HOSTPATH))
    namesake = example("orangefs-small.yaml", "OrangeFSCluster")  # the same name in another namespace
    namesake["spec"].update(HOSTPATH)
    elsewhere = kube.custom.create(OFS, "team-b", namesake)
    assert elsewhere is not None
    rec.reconcile(context(kube, Events()), elsewhere)
    assert len(kube.list("PersistentVolume", "", "")) == 4
    rec.release_volumes(context(kube, events), fresh(kube))
    assert [pv["metadata"]["name"] for pv in kube.list("PersistentVolume", "", "")] == [
        "pfslayout.team-b.small.server-0", "pfslayout.team-b.small.server-1"]
