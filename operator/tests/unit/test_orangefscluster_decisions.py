"""Reconciliation decisions: what is applied, what is refused and why, and the status they produce."""

from __future__ import annotations

import json
from typing import Any

from pfslayout import naming
from pfslayout.k8s.workloads import pod_failure, pods_ready_by_ordinal
from pfslayout.kinds.orangefscluster import meta as c
from pfslayout.kinds.orangefscluster.decisions import applied_record, decide, read_applied
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology, fs_conf_for
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.kinds.orangefscluster.status import Observed, compute_status, endpoints, events, phase_of, ready_servers

NS, NAME = "lab", "demo"
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def spec(count: int = 4, meta: int | None = None, **over: Any) -> Any:
    servers: dict[str, Any] = {"count": count}
    if meta is not None:
        servers["metadataCount"] = meta
    return parse_spec({"servers": servers, "storage": {"type": "emptyDir"}, **over})


def applied(count: int = 4, meta: int | None = None, **over: Any) -> dict[str, Any]:
    s = spec(count, meta)
    return {**applied_record(s, NS, NAME, Topology.of(s)), **over}


def sts(replicas: int, ready: int, *, updated: int | None = None, generation: int = 1, observed: int = 1,
        record: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "demo-server", "generation": generation}
    if record is not None:
        meta["annotations"] = {c.APPLIED_ANNOTATION: json.dumps(record)}
    return {"metadata": meta, "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "readyReplicas": ready, "observedGeneration": observed,
                       "updatedReplicas": replicas if updated is None else updated,
                       "currentRevision": "r1", "updateRevision": "r1"}}


def test_first_reconcile_applies_the_spec() -> None:
    p = decide(spec(4, 2), NS, NAME, None)
    assert p.apply and p.topology == Topology(4, 2)
    assert p.applied["fsId"] == naming.derive_fs_id(NS, NAME)


def test_scale_up_and_more_metadata_servers_are_applied() -> None:
    p = decide(spec(6, 3), NS, NAME, applied(4, 2))
    assert p.apply and p.topology == Topology(6, 3)
    assert p.applied["servers"] == 6


def test_scale_down_is_refused_without_consent_and_keeps_what_runs() -> None:
    p = decide(spec(2), NS, NAME, applied(4))
    assert not p.apply
    assert p.topology == Topology(4, 4)
    assert p.applied == applied(4)
    (refusal,) = p.refusals
    assert refusal.reason == "ScaleDownRefused"
    assert "servers 4 -> 2" in refusal.message and f"{c.CONFIRM_SCALE_DOWN_ANNOTATION}=2" in refusal.message


def test_scale_down_needs_consent_for_exactly_the_new_count() -> None:
    assert not decide(spec(2), NS, NAME, applied(4), {c.CONFIRM_SCALE_DOWN_ANNOTATION: "3"}).apply
    p = decide(spec(2), NS, NAME, applied(4), {c.CONFIRM_SCALE_DOWN_ANNOTATION: "2"})
    assert p.apply and p.topology == Topology(2, 2)


def test_fewer_metadata_servers_is_a_scale_down_too() -> None:
    p = decide(spec(4, 2), NS, NAME, applied(4))
    assert [r.reason for r in p.refusals] == ["ScaleDownRefused"]
    assert "metadata servers 4 -> 2" in p.refusals[0].message


def test_immutable_fields_changed_behind_the_crds_back_are_refused() -> None:
    p = decide(spec(4, fs={"name": "other"}), NS, NAME, applied(4))
    assert [r.reason for r in p.refusals] == ["ImmutableFieldChanged"]
    assert p.refusals[0].message.startswith("spec.fs.name: cannot change from 'orangefs' to 'other'")
    p = decide(spec(4, ports={"tcp": 4000}), NS, NAME, applied(4))
    assert [r.reason for r in p.refusals] == ["ImmutableFieldChanged"]


def test_read_applied_tolerates_missing_or_bad_annotations() -> None:
    assert read_applied(None) is None
    assert read_applied({"metadata": {}}) is None
    assert read_applied({"metadata": {"annotations": {c.APPLIED_ANNOTATION: "{not json"}}}) is None
    assert read_applied(sts(4, 4, record=applied(4))) == applied(4)


def test_phases() -> None:
    t = Topology(4, 4)
    assert phase_of(t, Observed(None), (), None) == "Pending"
    assert phase_of(t, Observed(sts(4, 2)), (), "Pending") == "Provisioning"
    assert phase_of(t, Observed(sts(4, 4)), (), "Provisioning") == "Ready"
    # A rolling restart (new fs.conf) is provisioning, not degradation.
    assert phase_of(t, Observed(sts(4, 4, updated=2)), (), "Ready") == "Provisioning"
    assert phase_of(t, Observed(sts(4, 4, generation=2, observed=1)), (), "Ready") == "Provisioning"
    assert phase_of(t, Observed(sts(4, 3)), (), "Ready") == "Degraded"
    assert phase_of(t, Observed(sts(4, 4)), (decide(spec(2), NS, NAME, applied(4)).refusals), "Ready") == "Degraded"
    assert phase_of(t, Observed(sts(4, 4)), (), "Ready", error="bad") == "Failed"


def test_ready_servers_counts_only_running_ordinals() -> None:
    obs = Observed(sts(4, 4), {0: True, 1: True, 2: False, 3: True, 5: True})
    assert ready_servers(obs, Topology(4, 4)) == 3
    assert ready_servers(Observed(sts(4, 3)), Topology(4, 4)) == 3
    assert ready_servers(Observed(sts(6, 6)), Topology(4, 4)) == 4


def test_pods_ready_by_ordinal() -> None:
    def pod(name: str, ready: bool, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if deleting:
            meta["deletionTimestamp"] = T0
        return {"metadata": meta, "status": {"conditions": [{"type": "Ready", "status": str(ready)}]}}
    pods = [pod("demo-server-0", True), pod("demo-server-1", False), pod("demo-server-2", True, deleting=True),
            pod("demo-client-abc", True), pod("demo-server-x", True)]
    assert pods_ready_by_ordinal(pods, "demo-server") == {0: True, 1: False}


def status_for(observed: Observed, previous: dict[str, Any] | None = None, now: str = T0, **kw: Any) -> dict[str, Any]:
    s = spec(2)
    topology = kw.pop("topology", Topology(2, 2))
    conf = fs_conf_for(s, NAME, NS, topology)
    block = endpoints(conf, observed, "/mnt/orangefs", "demo-server", "demo-fs-conf", "demo-pvfs2tab")
    return compute_status(generation=kw.pop("generation", 3), topology=topology, refusals=kw.pop("refusals", ()),
                          observed=observed, previous=previous, now=now, fs_id=conf.fs_id, endpoint_block=block,
                          **kw)


def conds(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {x["type"]: x for x in status["conditions"]}


def test_status_ready_with_endpoints_and_observed_generation() -> None:
    st = status_for(Observed(sts(2, 2), {0: True, 1: True}))
    assert st["phase"] == "Ready" and st["servers"] == 2 and st["readyServers"] == 2
    assert st["observedGeneration"] == 3 and st["fsId"] == naming.derive_fs_id(NS, NAME)
    cs = conds(st)
    assert cs["Ready"]["status"] == "True" and cs["Ready"]["reason"] == "AllServersReady"
    assert all(x["observedGeneration"] == 3 for x in cs.values())
    ep = st["endpoints"]
    assert ep["servers"][1] == {"ordinal": 1, "alias": "demo-server-1",
                                "url": "tcp://demo-server-1.demo-server.lab.svc.cluster.local:3334",
                                "metadata": True, "ready": True}
    assert ep["uri"].count("tcp://") == 2 and ep["fsConfConfigMap"] == "demo-fs-conf"


def test_condition_transition_time_moves_only_when_status_changes() -> None:
    first = status_for(Observed(sts(2, 1), {0: True, 1: False}), now=T0)
    assert conds(first)["Ready"]["status"] == "False"
    same = status_for(Observed(sts(2, 1), {0: True, 1: False}), previous=first, now=T1)
    assert conds(same)["Ready"]["lastTransitionTime"] == T0
    ready = status_for(Observed(sts(2, 2), {0: True, 1: True}), previous=same, now=T1)
    assert conds(ready)["Ready"]["lastTransitionTime"] == T1
    assert conds(ready)["SpecApplied"]["lastTransitionTime"] == T0  # True all along


def test_status_reports_refusal_and_invalid_spec() -> None:
    refusals = decide(spec(1), NS, NAME, applied(2)).refusals
    st = status_for(Observed(sts(2, 2), {0: True, 1: True}), refusals=refusals)
    cs = conds(st)
    assert st["phase"] == "Degraded" and st["servers"] == 2
    assert cs["Ready"]["reason"] == cs["SpecApplied"]["reason"] == "ScaleDownRefused"
    assert cs["ServersAvailable"]["status"] == "True"
    bad = status_for(Observed(None), error="spec.storage.size: required for storage type pvc")
    assert bad["phase"] == "Failed"
    assert conds(bad)["SpecApplied"]["message"].startswith("spec.storage.size")


def test_a_server_stuck_on_its_image_names_it_and_the_field_to_fix() -> None:
    """ImagePullBackOff of a server pod (k8s.workloads.pod_failure) is the Ready condition's reason, its
    message names the pod, the image and spec.image, and the change is a Warning Event."""
    image = "reg.example/pfslayout/orangefs:nope"
    waiting = {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
    # the servers' init container is the first to need the image (Init:ErrImagePull in kubectl get pods)
    pod = {"metadata": {"name": "demo-server-1"},
           "status": {"initContainerStatuses": [{"image": image, "state": {"waiting": waiting}}],
                      "containerStatuses": [{"image": image, "state": {"waiting": {"reason": "PodInitializing"}}}]}}
    stuck = pod_failure([pod])
    assert stuck is not None
    first = status_for(Observed(sts(2, 1), {0: True, 1: False}), now=T0)
    st = status_for(Observed(sts(2, 1), {0: True, 1: False}, stuck), previous=first, now=T1)
    ready = conds(st)["Ready"]
    assert st["phase"] == "Provisioning" and ready["status"] == "False" and ready["reason"] == "ImagePullBackOff"
    assert "demo-server-1" in ready["message"] and image in ready["message"]
    assert "set spec.image" in ready["message"] and ready["message"].startswith("1/2 servers Ready; ")
    warned = [e for e in events(first, st) if e.reason == "ImagePullBackOff"]
    assert [e.type for e in warned] == ["Warning"] and "spec.image" in warned[0].message


def test_job_state() -> None:
    from pfslayout.k8s.workloads import job_state
    assert job_state(None) == "missing"
    assert job_state({"spec": {"suspend": True}, "status": {}}) == "suspended"
    assert job_state({"spec": {"suspend": False}, "status": {"active": 1}}) == "running"
    assert job_state({"spec": {}, "status": {"succeeded": 1}}) == "succeeded"
    assert job_state({"spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}) == "succeeded"
    assert job_state({"spec": {}, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}) == "failed"
    assert job_state({"spec": {}, "status": {"conditions": [{"type": "Failed", "status": "False"}]}}) == "running"
