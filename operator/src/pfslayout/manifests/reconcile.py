"""Reconciliation decisions for an OrangeFSCluster, as pure functions.

`plan` decides what to apply given the spec and what is running (the `applied` record the operator
keeps on the StatefulSet); `compute_status` turns observations into the status block. The Kopf handlers
only fetch, call these, and write.

What OrangeFS cannot change live:
* fs name, fs ID, TCP port, storage type -- refused by CEL on the CRD; re-checked here against the
  applied record (reason `ImmutableFieldChanged`) in case the CRD in the cluster is older.
* fewer servers, or fewer metadata servers -- every file striped over a removed server loses data
  (OrangeFS has no migration tool). Refused (reason `ScaleDownRefused`) until the object carries the
  annotation `pfslayout.io/confirm-scale-down: "<new servers.count>"`, i.e. consent for exactly that
  count. Claims of removed servers follow `reclaimPolicy`.
* more servers, more metadata servers, distribution, image, resources, client: safe. Handle ranges
  come from fixed per-ordinal slots, so old ranges never move; the new fs.conf rolls the servers.

A refused change applies nothing of the new spec ("never half way"): the objects stay as they are and
the `SpecApplied` and `Ready` conditions say why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pfslayout.manifests import common as c
from pfslayout.manifests.config import Topology, fs_id_for
from pfslayout.manifests.spec import OrangeFSClusterSpec

PHASES = ("Pending", "Provisioning", "Ready", "Degraded", "Failed", "Terminating")


@dataclass(frozen=True)
class Refusal:
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    topology: Topology
    applied: dict[str, Any]
    refusals: tuple[Refusal, ...] = ()

    @property
    def apply(self) -> bool:
        return not self.refusals


def applied_record(spec: OrangeFSClusterSpec, namespace: str, name: str, topology: Topology,
                   generation: int | None = None) -> dict[str, Any]:
    """What the operator stamps on the StatefulSet: the facts later changes are checked against, and
    the generation of the spec they came from."""
    out: dict[str, Any] = {"servers": topology.servers, "metadataServers": topology.metadata_servers,
                           "fsName": spec.fs.name, "fsId": fs_id_for(spec, namespace, name),
                           "port": spec.ports.tcp, "storageType": spec.storage.type}
    if generation is not None:
        out["generation"] = generation
    return out


def read_applied(statefulset: dict[str, Any] | None) -> dict[str, Any] | None:
    if not statefulset:
        return None
    raw = ((statefulset.get("metadata") or {}).get("annotations") or {}).get(c.APPLIED_ANNOTATION)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def plan(spec: OrangeFSClusterSpec, namespace: str, name: str, applied: dict[str, Any] | None,
         annotations: dict[str, str] | None = None, generation: int | None = None) -> Plan:
    wanted = Topology.of(spec)
    record = applied_record(spec, namespace, name, wanted, generation)
    if applied is None:
        return Plan(wanted, record)
    refusals: list[Refusal] = []
    for key, field_path in (("fsName", "spec.fs.name"), ("fsId", "spec.fs.id"), ("port", "spec.ports.tcp"),
                            ("storageType", "spec.storage.type")):
        if key in applied and applied[key] != record[key]:
            refusals.append(Refusal("ImmutableFieldChanged",
                                    f"{field_path}: cannot change from {applied[key]!r} to {record[key]!r} on a "
                                    "live file system; restore it, or create a new OrangeFSCluster"))
    running = Topology(int(applied.get("servers", wanted.servers)),
                       int(applied.get("metadataServers", wanted.metadata_servers)))
    shrinking = wanted.servers < running.servers or wanted.metadata_servers < running.metadata_servers
    if shrinking:
        consent = (annotations or {}).get(c.CONFIRM_SCALE_DOWN_ANNOTATION)
        if consent != str(wanted.servers):
            what = []
            if wanted.servers < running.servers:
                what.append(f"servers {running.servers} -> {wanted.servers}")
            if wanted.metadata_servers < running.metadata_servers:
                what.append(f"metadata servers {running.metadata_servers} -> {wanted.metadata_servers}")
            refusals.append(Refusal(
                "ScaleDownRefused",
                f"spec.servers: scaling down ({', '.join(what)}) loses every file striped over the removed "
                f"servers; still running {running.servers} servers. To accept the loss, annotate the object "
                f"{c.CONFIRM_SCALE_DOWN_ANNOTATION}={wanted.servers}, or restore spec.servers"))
    if refusals:
        kept = dict(applied)
        return Plan(running, kept, tuple(refusals))
    return Plan(wanted, record)


# ------------------------------------------------------------------------------------------------
# Status
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Observed:
    """What the StatefulSet and its pods say. `statefulset=None` means it does not exist (yet)."""

    statefulset: dict[str, Any] | None = None
    pods_ready: dict[int, bool] = field(default_factory=dict)


def _rollout_done(sts: dict[str, Any], replicas: int) -> bool:
    st = sts.get("status") or {}
    gen = (sts.get("metadata") or {}).get("generation")
    return (gen is None or st.get("observedGeneration", 0) >= gen) \
        and st.get("replicas", 0) == replicas \
        and st.get("updatedReplicas", 0) == replicas \
        and (not st.get("updateRevision") or st.get("currentRevision") == st.get("updateRevision"))


def ready_servers(observed: Observed, topology: Topology) -> int:
    """Ready servers among the ordinals the topology runs (pods of removed ordinals do not count)."""
    if observed.statefulset is None:
        return 0
    if observed.pods_ready:
        return sum(1 for i, ok in observed.pods_ready.items() if ok and i < topology.servers)
    return min(topology.servers, int((observed.statefulset.get("status") or {}).get("readyReplicas", 0) or 0))


def phase_of(topology: Topology, observed: Observed, refusals: tuple[Refusal, ...], previous: str | None,
             error: str | None = None) -> str:
    if error:
        return "Failed"
    if observed.statefulset is None:
        return "Pending"
    ready = ready_servers(observed, topology)
    rolled = _rollout_done(observed.statefulset, topology.servers)
    if ready >= topology.servers and rolled:
        return "Degraded" if refusals else "Ready"
    if rolled and previous in ("Ready", "Degraded"):
        return "Degraded"  # was serving, lost servers without any change of ours in flight
    return "Provisioning"


def condition(type_: str, ok: bool, reason: str, message: str, generation: int, now: str,
              previous: list[dict[str, Any]] | None) -> dict[str, Any]:
    status = "True" if ok else "False"
    last = now
    for old in previous or []:
        if old.get("type") == type_ and old.get("status") == status:
            last = old.get("lastTransitionTime") or now  # unchanged status keeps its transition time
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "observedGeneration": generation, "lastTransitionTime": last}


def endpoints(fs_conf: Any, observed: Observed, mount_path: str, service: str, fs_conf_cm: str,
              pvfs2tab_cm: str) -> dict[str, Any]:
    return {
        "uri": fs_conf.pvfs2tab_uri(),
        "mountPath": mount_path,
        "service": service,
        "fsConfConfigMap": fs_conf_cm,
        "pvfs2tabConfigMap": pvfs2tab_cm,
        "servers": [{"ordinal": s.ordinal, "alias": s.alias, "url": s.url, "metadata": s.metadata,
                     "ready": bool(observed.pods_ready.get(s.ordinal, False))} for s in fs_conf.servers],
    }


def compute_status(*, generation: int, topology: Topology, refusals: tuple[Refusal, ...], observed: Observed,
                   previous: dict[str, Any] | None, now: str, fs_id: int | None,
                   endpoint_block: dict[str, Any] | None, error: str | None = None) -> dict[str, Any]:
    previous = previous or {}
    old_conditions = previous.get("conditions") or []
    phase = phase_of(topology, observed, refusals, previous.get("phase"), error)
    ready = ready_servers(observed, topology)
    if error:
        ready_reason, ready_msg = "InvalidSpec", error
    elif refusals:
        ready_reason, ready_msg = refusals[0].reason, refusals[0].message
    elif phase == "Ready":
        ready_reason, ready_msg = "AllServersReady", f"{ready}/{topology.servers} servers Ready"
    elif phase == "Pending":
        ready_reason, ready_msg = "Pending", "server StatefulSet not created yet"
    elif phase == "Degraded":
        ready_reason, ready_msg = "ServersNotReady", f"{ready}/{topology.servers} servers Ready"
    else:
        ready_reason, ready_msg = "Provisioning", f"{ready}/{topology.servers} servers Ready; rolling out"
    available = observed.statefulset is not None and ready >= topology.servers
    conditions = [
        condition("Ready", phase == "Ready", ready_reason, ready_msg, generation, now, old_conditions),
        condition("ServersAvailable", available, "AllServersReady" if available else "ServersNotReady",
                  f"{ready}/{topology.servers} servers Ready", generation, now, old_conditions),
        condition("SpecApplied", not refusals and not error,
                  "InvalidSpec" if error else (refusals[0].reason if refusals else "Applied"),
                  error or ("; ".join(r.message for r in refusals) if refusals
                            else "the current spec is applied"), generation, now, old_conditions),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "servers": topology.servers,
        "readyServers": ready,
        "conditions": conditions,
        "observedGeneration": generation,
    }
    if fs_id is not None:
        status["fsId"] = fs_id
    if endpoint_block is not None:
        status["endpoints"] = endpoint_block
    return status


def pods_ready_by_ordinal(pods: list[dict[str, Any]], statefulset_name: str) -> dict[int, bool]:
    """Map each server pod's ordinal (from its name `<sts>-<i>`) to its Ready condition."""
    out: dict[int, bool] = {}
    prefix = f"{statefulset_name}-"
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = meta.get("name", "")
        if not name.startswith(prefix) or not name[len(prefix):].isdigit() or meta.get("deletionTimestamp"):
            continue
        conds = (pod.get("status") or {}).get("conditions") or []
        out[int(name[len(prefix):])] = any(x.get("type") == "Ready" and x.get("status") == "True" for x in conds)
    return out


def job_state(job: dict[str, Any] | None) -> str:
    """`missing`, `suspended`, `running`, `succeeded` or `failed`, from a batch/v1 Job."""
    if not job:
        return "missing"
    st = job.get("status") or {}
    for cond in st.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "succeeded"
        if cond.get("status") == "True" and cond.get("type") in ("Failed", "FailureTarget"):
            return "failed"
    if int(st.get("succeeded") or 0) >= 1:
        return "succeeded"
    if (job.get("spec") or {}).get("suspend"):
        return "suspended"
    return "running"
