"""OrangeFSCluster reconciliation: fetch, call the pure decisions and builders, write, post Events.

Kept free of Kopf decorators so the handler module stays a list of thin entry points. Events go through
the `post` callable (Kopf's `kopf.event` in the operator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pfslayout import metrics, naming
from pfslayout.errors import InputError
from pfslayout.k8s.api import Kube
from pfslayout.k8s.meta import Owner, owner_of, selector_string
from pfslayout.k8s.workloads import job_state, pods_ready_by_ordinal
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.orangefscluster import meta as m
from pfslayout.kinds.orangefscluster import objects as objs
from pfslayout.kinds.orangefscluster import status as st
from pfslayout.kinds.orangefscluster.calibration import auto_calibration, current_calibration
from pfslayout.kinds.orangefscluster.decisions import ApplyDecision, decide, read_applied
from pfslayout.kinds.orangefscluster.desired import Desired, desired
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology, fs_conf_for
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec, parse_spec
from pfslayout.operator import settings
from pfslayout.operator.shared.clock import now
from pfslayout.operator.shared.events import Post, post_all
from pfslayout.operator.shared.locks import object_lock

KIND = OFS.kind


def _fresh(kube: Kube, body: dict[str, Any]) -> dict[str, Any] | None:
    meta = body["metadata"]
    return kube.custom.get(OFS, meta["namespace"], meta["name"])


def cluster_domain() -> str:
    return settings.current().cluster_domain


@dataclass(frozen=True)
class Outcome:
    status: dict[str, Any]
    decision: ApplyDecision | None
    changes: tuple[tuple[str, str, str], ...]  # (kind, name, action)


def _owner(body: dict[str, Any]) -> Owner:
    return owner_of(OFS, body)


def _observe(kube: Kube, owner: Owner, statefulset: dict[str, Any] | None) -> st.Observed:
    if statefulset is None:
        return st.Observed(None, {})
    pods = kube.list("Pod", owner.namespace, selector_string(m.selector(owner, objs.SERVER)))
    return st.Observed(statefulset, pods_ready_by_ordinal(pods, naming.server_statefulset(owner.name)))


def _endpoint_block(spec: OrangeFSClusterSpec, owner: Owner, topology: Topology, observed: st.Observed
                    ) -> dict[str, Any]:
    conf = fs_conf_for(spec, owner.name, owner.namespace, topology, cluster_domain=cluster_domain())
    return st.endpoints(conf, observed, spec.client.mount_path, naming.server_service(owner.name),
                        naming.fs_conf_configmap(owner.name), naming.pvfs2tab_configmap(owner.name))


def _post_transitions(post: Post, body: dict[str, Any], old: dict[str, Any], new: dict[str, Any]) -> None:
    """An Event for every state change: the phase, and each condition whose status or reason moved."""
    post_all(post, body, st.events(old, new))


def _write_status(kube: Kube, post: Post, body: dict[str, Any], status: dict[str, Any]) -> None:
    meta = body["metadata"]
    old = body.get("status") or {}
    kube.custom.replace_status(OFS, meta["namespace"], meta["name"], old, status)
    _post_transitions(post, body, old, status)
    metrics.set_phase(meta["namespace"], meta["name"], status["phase"], st.PHASES)
    metrics.READY_SERVERS.labels(meta["namespace"], meta["name"]).set(status.get("readyServers", 0))


def reconcile(kube: Kube, body: dict[str, Any], post: Post) -> Outcome:
    """Bring the children of one OrangeFSCluster to its spec (or hold them, when a change is refused)."""
    meta = body["metadata"]
    with object_lock(OFS, meta["namespace"], meta["name"]):
        fresh = _fresh(kube, body)
        if fresh is not None and (fresh.get("metadata") or {}).get("uid") == meta.get("uid"):
            body = fresh
        return _reconcile_locked(kube, body, post)


def _reconcile_locked(kube: Kube, body: dict[str, Any], post: Post) -> Outcome:
    owner = _owner(body)
    meta = body["metadata"]
    generation = int(meta.get("generation") or 0)
    try:
        spec = parse_spec(body.get("spec"))
    except InputError as err:
        status = st.compute_status(generation=generation, topology=Topology(0, 0), refusals=(),
                                   observed=st.Observed(), previous=body.get("status"), now=now(), fs_id=None,
                                   endpoint_block=None, error=str(err))
        _write_status(kube, post, body, status)
        raise
    sts_name = naming.server_statefulset(owner.name)
    current = kube.get("StatefulSet", owner.namespace, sts_name)
    decision = decide(spec, owner.namespace, owner.name, read_applied(current), meta.get("annotations") or {},
                      generation)
    changes: list[tuple[str, str, str]] = []
    sts = current
    if decision.apply:
        want: Desired = desired(m.Context(spec, owner, cluster_domain()), decision)
        for obj in want.objects:
            result = kube.apply(obj)
            name = obj["metadata"]["name"]
            if obj["kind"] == "StatefulSet":
                sts = result.obj
            if result.action != "unchanged":
                changes.append((obj["kind"], name, result.action))
        for kind, name in want.absent:
            if kube.delete(kind, owner.namespace, name):
                changes.append((kind, name, "deleted"))
        for kind, name, action in changes:
            metrics.OBJECT_CHANGES.labels(KIND, kind, action).inc()
            post(body, "Normal", action.capitalize(), f"{kind} {name} {action}")
        before = read_applied(current)
        if before and before.get("servers") != decision.topology.servers:
            post(body, "Normal", "Scaled", f"servers {before.get('servers')} -> {decision.topology.servers}")
    observed = _observe(kube, owner, sts)
    status = st.compute_status(
        generation=generation, topology=decision.topology, refusals=decision.refusals, observed=observed,
        previous=body.get("status"), now=now(), fs_id=int(decision.applied["fsId"]),
        endpoint_block=_endpoint_block(spec, owner, decision.topology, observed))
    _write_status(kube, post, body, status)
    _auto_calibrate(kube, post, body, spec, status)
    return Outcome(status, decision, tuple(changes))


def refresh_status(kube: Kube, body: dict[str, Any], post: Post) -> dict[str, Any] | None:
    """Recompute the status from the StatefulSet and its pods, without applying anything."""
    meta = body["metadata"]
    with object_lock(OFS, meta["namespace"], meta["name"]):
        fresh = _fresh(kube, body)
        if fresh is None or (fresh.get("metadata") or {}).get("uid") != meta.get("uid"):
            return None
        # The event's StatefulSet may be older than the one a concurrent reconcile just applied.
        return _refresh_locked(kube, fresh, post)


def _refresh_locked(kube: Kube, body: dict[str, Any], post: Post) -> dict[str, Any] | None:
    owner = _owner(body)
    meta = body["metadata"]
    if meta.get("deletionTimestamp"):
        return None
    try:
        spec = parse_spec(body.get("spec"))
    except InputError:
        return None  # the reconcile handler reports it
    sts = kube.get("StatefulSet", owner.namespace, naming.server_statefulset(owner.name))
    applied = read_applied(sts)
    generation = int(meta.get("generation") or 0)
    decision = decide(spec, owner.namespace, owner.name, applied, meta.get("annotations") or {}, generation)
    if applied is None or (decision.apply and applied.get("generation") != generation):
        return None  # the spec moved on and the reconcile handler has yet to apply it; it writes the status
    observed = _observe(kube, owner, sts)
    status = st.compute_status(
        generation=generation, topology=decision.topology, refusals=decision.refusals,
        observed=observed, previous=body.get("status"), now=now(), fs_id=int(decision.applied["fsId"]),
        endpoint_block=_endpoint_block(spec, owner, decision.topology, observed))
    _write_status(kube, post, body, status)
    _auto_calibrate(kube, post, body, spec, status)
    return status


def _auto_calibrate(kube: Kube, post: Post, body: dict[str, Any], spec: OrangeFSClusterSpec,
                    status: dict[str, Any]) -> None:
    """`calibration.auto`: the first time the cluster is Ready, create its CostCalibration and point
    `status.calibrationRef` at it (which also records that it was made: it is not re-created)."""
    if not spec.calibration.auto or status.get("phase") != "Ready":
        return
    if ((body.get("status") or {}).get("calibrationRef") or {}).get("name"):
        return
    owner = _owner(body)
    cc = auto_calibration(spec, owner, settings.current().probe_image)
    name = naming.auto_calibration(owner.name)
    if kube.custom.create(CC, owner.namespace, cc) is not None:
        post(body, "Normal", "CalibrationCreated",
             f"CostCalibration {name} ({spec.calibration.profile} profile) calibrates the cost model on this cluster")
    kube.custom.patch_status(OFS, owner.namespace, owner.name, {"calibrationRef": {"name": name}})


def refresh_calibration_ref(kube: Kube, namespace: str, name: str, post: Post) -> dict[str, Any] | None:
    """Point `status.calibrationRef` of cluster `namespace/name` at its current calibration (called when a
    CostCalibration of it finishes); an Event when it moves."""
    with object_lock(OFS, namespace, name):
        body = kube.custom.get(OFS, namespace, name)
        if body is None or (body.get("metadata") or {}).get("deletionTimestamp"):
            return None
        previous = (body.get("status") or {}).get("calibrationRef")
        ref = current_calibration(name, kube.custom.list(CC, namespace), previous)
        if ref is not None and ref != previous:
            kube.custom.patch_status(OFS, namespace, name, {"calibrationRef": {
                "name": ref["name"], "configMapName": ref.get("configMapName"),
                "completionTime": ref.get("completionTime")}})
            if ref.get("completionTime"):
                post(body, "Normal", "CalibrationCurrent",
                     f"cost parameters from CostCalibration {ref['name']} (ConfigMap {ref.get('configMapName')})")
        return ref


def mark_terminating(kube: Kube, body: dict[str, Any], post: Post) -> list[str]:
    """On delete: phase Terminating, and what will happen to the data (children go by owner references)."""
    meta = body["metadata"]
    owner = _owner(body)
    policy: str
    storage: str
    try:
        spec = parse_spec(body.get("spec"))
        policy, storage = spec.reclaim_policy, spec.storage.type
    except InputError:
        policy, storage = "Retain", "unknown"
    old = body.get("status") or {}
    status = {"phase": "Terminating"}
    kube.custom.patch_status(OFS, meta["namespace"], meta["name"], status)
    _post_transitions(post, body, old, {**old, **status, "conditions": old.get("conditions") or []})
    notes = []
    if storage == "pvc":
        claims = kube.list("PersistentVolumeClaim", owner.namespace,
                           selector_string(m.selector(owner, objs.SERVER)))
        names = sorted(x["metadata"]["name"] for x in claims)
        if policy == "Delete":
            notes.append(f"reclaimPolicy Delete: the StatefulSet controller deletes {len(names)} claims {names}")
        else:
            notes.append(f"reclaimPolicy Retain: keeping {len(names)} claims {names}")
    elif storage == "hostPath":
        notes.append("reclaimPolicy Delete: wipe Jobs remove each server's hostPath directory" if policy == "Delete"
                     else "reclaimPolicy Retain: hostPath data stays on the nodes")
    else:
        notes.append("emptyDir storage goes with the pods")
    for note in notes:
        post(body, "Normal", "Deleting", note)
    metrics.forget(meta["namespace"], meta["name"], st.PHASES)
    return notes


class Waiting(Exception):
    """Deletion must wait (servers still stopping, wipe Jobs still running); the handler retries."""


WIPE_DEADLINE_S = 300


def wipe_hostpath(kube: Kube, body: dict[str, Any], post: Post, elapsed_s: float) -> list[str]:
    """`reclaimPolicy: Delete` with hostPath storage: remove `<path>/<pod name>` on each server's node.

    Steps, each retried until done: (1) one suspended wipe Job per running server pod, pinned to its
    node (the Jobs are the record of where the data is); (2) delete the StatefulSet and wait for its pods
    to go; (3) resume the Jobs and wait for them. Gives up with a Warning after WIPE_DEADLINE_S so a
    broken node cannot block the deletion forever. Returns notes for the log; raises Waiting.
    """
    owner = _owner(body)
    try:
        spec = parse_spec(body.get("spec"))
    except InputError:
        return []
    if spec.storage.type != "hostPath" or spec.reclaim_policy != "Delete":
        return []
    ctx = m.Context(spec, owner, cluster_domain())
    sts_name = naming.server_statefulset(owner.name)
    pods = kube.list("Pod", owner.namespace, selector_string(m.selector(owner, objs.SERVER)))
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        name = pod["metadata"]["name"]
        job_name = naming.wipe_job(owner.name, name)
        if node and kube.get("Job", owner.namespace, job_name) is None:
            kube.apply(objs.wipe_job(ctx, name, node, suspend=True))
            post(body, "Normal", "WipeScheduled", f"Job {job_name} will remove {name}'s hostPath data on {node}")
    jobs = kube.list("Job", owner.namespace, selector_string(m.selector(owner, objs.WIPE)))
    if elapsed_s > WIPE_DEADLINE_S:
        post(body, "Warning", "WipeTimedOut",
            f"gave up after {WIPE_DEADLINE_S}s: hostPath data may remain on the nodes")
        return ["wipe timed out"]
    if kube.get("StatefulSet", owner.namespace, sts_name) is not None:
        kube.delete("StatefulSet", owner.namespace, sts_name, propagation="Background")
        raise Waiting("stopping the servers before removing their storage")
    if pods:
        raise Waiting(f"{len(pods)} server pods still stopping")
    states = {}
    for job in jobs:
        name = job["metadata"]["name"]
        state = job_state(job)
        if state == "suspended":
            pod_spec = job["spec"]["template"]["spec"]
            pod_name = pod_spec["containers"][0]["command"][-1].rsplit("/", 1)[-1]
            kube.apply(objs.wipe_job(ctx, pod_name, pod_spec["nodeName"], suspend=False))
            state = "running"
        states[name] = state
    if any(s in ("running", "missing") for s in states.values()):
        raise Waiting(f"wipe Jobs running: {sorted(n for n, s in states.items() if s == 'running')}")
    failed = sorted(n for n, s in states.items() if s == "failed")
    if failed:
        post(body, "Warning", "WipeFailed", f"Jobs {failed} failed: their hostPath data may remain")
    done = sorted(n for n, s in states.items() if s == "succeeded")
    if done:
        post(body, "Normal", "StorageWiped", f"hostPath data removed by {done}")
    return [f"wiped by {done}", *([f"failed: {failed}"] if failed else [])]
