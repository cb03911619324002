"""OrangeFSCluster reconciliation: fetch, call the pure decisions and builders, write, post Events.

Kept free of Kopf decorators so the handler module stays a list of thin entry points. Events go through
the context's `post` callable (Kopf's `kopf.event` in the operator). Each entry function runs one step of
`Reconcile` on a fresh copy of the object, under its lock.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pfslayout import metrics, naming
from pfslayout.errors import InputError
from pfslayout.k8s import nodes as k8s_nodes
from pfslayout.k8s.meta import selector_string
from pfslayout.k8s.workloads import job_state, pod_node
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.orangefscluster import meta as m
from pfslayout.kinds.orangefscluster import objects as objs
from pfslayout.kinds.orangefscluster import placement
from pfslayout.kinds.orangefscluster import status as st
from pfslayout.kinds.orangefscluster.calibration import auto_calibration, current_calibration
from pfslayout.kinds.orangefscluster.decisions import ApplyDecision, decide, read_applied
from pfslayout.kinds.orangefscluster.desired import Desired, desired
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology, fs_conf_for
from pfslayout.kinds.orangefscluster.placement import Node
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec, parse_spec
from pfslayout.operator.reconcilers.base import Context, Reconciler
from pfslayout.operator.shared.clock import now
from pfslayout.operator.shared.locks import locked_fresh, object_lock

KIND = OFS.kind
WIPE_DEADLINE_S = 300


@dataclass(frozen=True)
class Outcome:
    status: dict[str, Any]
    decision: ApplyDecision | None
    changes: tuple[tuple[str, str, str], ...]  # (kind, name, action)


class Waiting(Exception):
    """Deletion must wait (servers still stopping, wipe Jobs still running); the handler retries."""


def reconcile(ctx: Context, body: dict[str, Any]) -> Outcome:
    """Bring the children of one OrangeFSCluster to its spec (or hold them, when a change is refused)."""
    with locked_fresh(ctx.kube, OFS, body) as fresh:
        return Reconcile(ctx, fresh or body).apply()


def refresh_status(ctx: Context, body: dict[str, Any]) -> dict[str, Any] | None:
    """Recompute the status from the StatefulSet and its pods, without applying anything."""
    with locked_fresh(ctx.kube, OFS, body) as fresh:
        # The event's StatefulSet may be older than the one a concurrent reconcile just applied.
        return None if fresh is None else Reconcile(ctx, fresh).refresh()


def refresh_calibration_ref(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    """Point `status.calibrationRef` of cluster `namespace/name` at its current calibration (called when a
    CostCalibration of it finishes); an Event when it moves."""
    with object_lock(OFS, namespace, name):  # by name: whichever cluster of that name is there now
        body = ctx.kube.custom.get(OFS, namespace, name)
        if body is None or (body.get("metadata") or {}).get("deletionTimestamp"):
            return None
        return Reconcile(ctx, body).point_at_calibration()


def mark_terminating(ctx: Context, body: dict[str, Any]) -> list[str]:
    """On delete: phase Terminating, and what will happen to the data (children go by owner references)."""
    return Reconcile(ctx, body).mark_terminating()


def wipe_hostpath(ctx: Context, body: dict[str, Any], elapsed_s: float) -> list[str]:
    """`reclaimPolicy: Delete` with hostPath storage: remove `<path>/<pod name>` on each server's node.
    Returns notes for the log; raises Waiting (Reconcile.wipe_hostpath)."""
    return Reconcile(ctx, body).wipe_hostpath(elapsed_s)


def release_volumes(ctx: Context, body: dict[str, Any]) -> list[str]:
    """On delete: the hostPath servers' PersistentVolumes, which no owner reference removes."""
    return Reconcile(ctx, body).release_volumes()


class Reconcile(Reconciler):
    resource = OFS
    transitions = st.events

    @property
    def cluster_domain(self) -> str:
        return self.ctx.settings.cluster_domain

    def write(self, status: dict[str, Any]) -> dict[str, Any]:
        written = super().write(status)
        metrics.set_phase(self.owner.namespace, self.owner.name, status["phase"], st.PHASES)
        metrics.READY_SERVERS.labels(self.owner.namespace, self.owner.name).set(status.get("readyServers", 0))
        return written

    # ----------------------------------------------------------------------------------- apply, refresh

    def apply(self) -> Outcome:
        try:
            spec = parse_spec(self.body.get("spec"), self.ctx.settings.orangefs_image)
        except InputError as err:
            self.write(st.compute_status(generation=self.generation, topology=Topology(0, 0), refusals=(),
                                         observed=st.Observed(), previous=self.old, now=now(), fs_id=None,
                                         endpoint_block=None, error=str(err)))
            raise
        current = self.kube.get("StatefulSet", self.owner.namespace, naming.server_statefulset(self.owner.name))
        nodes = self.eligible_nodes(spec)
        decision = self.decide(spec, current, nodes)
        changes: list[tuple[str, str, str]] = []
        sts = current
        if decision.apply:
            sts, changes = self.apply_children(spec, decision, current, nodes)
        status = self.observe_and_write(spec, decision, sts, nodes)
        return Outcome(status, decision, tuple(changes))

    @functools.cached_property
    def all_nodes(self) -> list[dict[str, Any]]:
        """Every Node, read once per reconcile or status refresh (so `status.placement`, the ServersSpread
        and NodesReady conditions follow nodes joining, leaving and failing)."""
        return self.kube.list("Node", "", "")

    def eligible_nodes(self, spec: OrangeFSClusterSpec) -> list[Node]:
        """The nodes the servers may use."""
        return placement.eligible_nodes(spec, self.all_nodes)

    def ready_nodes(self) -> frozenset[str]:
        """The names of the nodes whose kubelet reports Ready: a server on any other is lost with its node."""
        return frozenset(str(n["metadata"]["name"]) for n in self.all_nodes if k8s_nodes.ready(n))

    def volumes(self) -> list[dict[str, Any]]:
        """The cluster's hostPath PersistentVolumes (cluster-scoped: found by their labels)."""
        selector = m.cluster_scoped_selector(self.owner, objs.SERVER)
        return self.kube.list("PersistentVolume", "", selector_string(selector))

    def decide(self, spec: OrangeFSClusterSpec, sts: dict[str, Any] | None, nodes: list[Node]) -> ApplyDecision:
        return decide(spec, self.owner.namespace, self.owner.name, read_applied(sts),
                      self.meta.get("annotations") or {}, self.generation, len(nodes))

    def apply_children(self, spec: OrangeFSClusterSpec, decision: ApplyDecision, current: dict[str, Any] | None,
                       nodes: list[Node]) -> tuple[dict[str, Any] | None, list[tuple[str, str, str]]]:
        """Every child to the spec, the ones no longer wanted deleted, an Event per change; the server
        StatefulSet as applied and the changes. hostPath volumes are made for the servers without one, on
        eligible nodes (placement.assign_nodes); existing ones are left as they are (desired.desired)."""
        new_volumes = None
        if decision.hostpath_volumes:
            pinned = placement.pinned_nodes(self.volumes(), self.owner)
            new_volumes = {i: node for i, node in placement.assign_nodes(decision.topology.servers, pinned,
                                                                         nodes).items() if i not in pinned}
        want: Desired = desired(m.BuildInputs(spec, self.owner, self.cluster_domain), decision, new_volumes)
        changes: list[tuple[str, str, str]] = []
        sts = current
        for obj in want.objects:
            result = self.kube.apply(obj)
            if obj["kind"] == "StatefulSet":
                sts = result.obj
            if result.action != "unchanged":
                changes.append((obj["kind"], obj["metadata"]["name"], result.action))
        for kind, name in want.absent:
            if self.kube.delete(kind, self.owner.namespace, name):
                changes.append((kind, name, "deleted"))
        for kind, name, action in changes:
            metrics.OBJECT_CHANGES.labels(KIND, kind, action).inc()
            self.post(self.body, "Normal", action.capitalize(), f"{kind} {name} {action}")
        before = read_applied(current)
        if before and before.get("servers") != decision.topology.servers:
            self.post(self.body, "Normal", "Scaled", f"servers {before.get('servers')} -> {decision.topology.servers}")
        return sts, changes

    def observe_and_write(self, spec: OrangeFSClusterSpec, decision: ApplyDecision, sts: dict[str, Any] | None,
                          nodes: list[Node]) -> dict[str, Any]:
        """The status from the StatefulSet, its pods and the eligible nodes, written; the cluster's
        CostCalibration created the first time it is Ready (`calibration.auto`)."""
        sts_name = naming.server_statefulset(self.owner.name)
        pods = [] if sts is None else self.kube.list("Pod", self.owner.namespace,
                                                     selector_string(m.selector(self.owner, objs.SERVER)))
        observed = st.observe(sts, pods, sts_name, len(nodes), self.ready_nodes())
        conf = fs_conf_for(spec, self.owner.name, self.owner.namespace, decision.topology,
                           cluster_domain=self.cluster_domain)
        endpoints = st.endpoints(conf, observed, spec.client.mount_path, naming.server_service(self.owner.name),
                                 naming.fs_conf_configmap(self.owner.name), naming.pvfs2tab_configmap(self.owner.name))
        status = st.compute_status(
            generation=self.generation, topology=decision.topology, refusals=decision.refusals, observed=observed,
            previous=self.body.get("status"), now=now(), fs_id=int(decision.applied["fsId"]), endpoint_block=endpoints,
            placed=st.Placement(spec.servers.spread, decision.spread, sts_name))
        self.write(status)
        self.auto_calibrate(spec, status)
        return status

    def refresh(self) -> dict[str, Any] | None:
        if self.meta.get("deletionTimestamp"):
            return None
        try:
            spec = parse_spec(self.body.get("spec"), self.ctx.settings.orangefs_image)
        except InputError:
            return None  # the reconcile handler reports it
        sts = self.kube.get("StatefulSet", self.owner.namespace, naming.server_statefulset(self.owner.name))
        applied = read_applied(sts)
        if applied is None:
            return None  # nothing applied yet: the reconcile handler writes the status
        nodes = self.eligible_nodes(spec)
        decision = self.decide(spec, sts, nodes)
        if decision.apply and applied.get("generation") != self.generation:
            return None  # the spec moved on and the reconcile handler has yet to apply it; it writes the status
        return self.observe_and_write(spec, decision, sts, nodes)

    # ------------------------------------------------------------------------------------- calibration

    def auto_calibrate(self, spec: OrangeFSClusterSpec, status: dict[str, Any]) -> None:
        """`calibration.auto`: the first time the cluster is Ready, create its CostCalibration and point
        `status.calibrationRef` at it (which also records that it was made: it is not re-created)."""
        if not spec.calibration.auto or status.get("phase") != "Ready":
            return
        if ((self.body.get("status") or {}).get("calibrationRef") or {}).get("name"):
            return
        cc = auto_calibration(spec, self.owner)
        name = naming.auto_calibration(self.owner.name)
        if self.kube.custom.create(CC, self.owner.namespace, cc) is not None:
            self.post(self.body, "Normal", "CalibrationCreated", f"CostCalibration {name} "
                      f"({spec.calibration.profile} profile) calibrates the cost model on this cluster")
        self.kube.custom.patch_status(OFS, self.owner.namespace, self.owner.name, {"calibrationRef": {"name": name}})

    def point_at_calibration(self) -> dict[str, Any] | None:
        namespace, name = self.owner.namespace, self.owner.name
        previous = self.old.get("calibrationRef")
        ref = current_calibration(name, self.kube.custom.list(CC, namespace), previous)
        if ref is not None and ref != previous:
            self.kube.custom.patch_status(OFS, namespace, name, {"calibrationRef": {
                "name": ref["name"], "configMapName": ref.get("configMapName"),
                "completionTime": ref.get("completionTime")}})
            if ref.get("completionTime"):
                self.post(self.body, "Normal", "CalibrationCurrent",
                          f"cost parameters from CostCalibration {ref['name']} (ConfigMap {ref.get('configMapName')})")
        return ref

    # ---------------------------------------------------------------------------------------- deletion

    def mark_terminating(self) -> list[str]:
        policy: str
        storage: str
        try:
            spec = parse_spec(self.body.get("spec"), self.ctx.settings.orangefs_image)
            policy, storage = spec.reclaim_policy, spec.storage.type
        except InputError:
            policy, storage = "Retain", "unknown"
        self.write({**self.old, "phase": "Terminating", "conditions": self.old.get("conditions") or []})
        notes = []
        if storage == "pvc":
            claims = self.kube.list("PersistentVolumeClaim", self.owner.namespace,
                                    selector_string(m.selector(self.owner, objs.SERVER)))
            names = sorted(x["metadata"]["name"] for x in claims)
            notes.append(f"reclaimPolicy Delete: the StatefulSet controller deletes {len(names)} claims {names}"
                         if policy == "Delete" else f"reclaimPolicy Retain: keeping {len(names)} claims {names}")
        elif storage == "hostPath":
            notes.append("reclaimPolicy Delete: wipe Jobs remove each server's hostPath directory" if policy == "Delete"
                         else "reclaimPolicy Retain: hostPath data stays on the nodes")
        else:
            notes.append("emptyDir storage goes with the pods")
        for note in notes:
            self.post(self.body, "Normal", "Deleting", note)
        metrics.forget(self.owner.namespace, self.owner.name, st.PHASES)
        return notes

    def wipe_hostpath(self, elapsed_s: float) -> list[str]:
        """Steps, each retried until done: (1) one suspended wipe Job per server, pinned to the node of its
        PersistentVolume, or (a StatefulSet made before volumes were pinned) of its running pod -- the Jobs
        are the record of where the data is; (2) delete the StatefulSet and wait for its
        pods to go; (3) resume the Jobs and wait for them. Gives up with a Warning after WIPE_DEADLINE_S so
        a broken node cannot block the deletion forever."""
        try:
            spec = parse_spec(self.body.get("spec"), self.ctx.settings.orangefs_image)
        except InputError:
            return []
        if spec.storage.type != "hostPath" or spec.reclaim_policy != "Delete":
            return []
        inputs = m.BuildInputs(spec, self.owner, self.cluster_domain)
        pods = self.kube.list("Pod", self.owner.namespace, selector_string(m.selector(self.owner, objs.SERVER)))
        where = {pod["metadata"]["name"]: pod_node(pod) for pod in pods if pod_node(pod)}
        # A pinned server's data is on its volume's node, whether its pod runs there, waits, or is gone
        # (a scale-down's removed servers left theirs too).
        sts_name = naming.server_statefulset(self.owner.name)
        where.update({naming.server_alias(sts_name, i): node.name
                      for i, node in placement.pinned_nodes(self.volumes(), self.owner).items()})
        self.schedule_wipes(inputs, where)
        jobs = self.kube.list("Job", self.owner.namespace, selector_string(m.selector(self.owner, objs.WIPE)))
        if elapsed_s > WIPE_DEADLINE_S:
            self.post(self.body, "Warning", "WipeTimedOut",
                      f"gave up after {WIPE_DEADLINE_S}s: hostPath data may remain on the nodes")
            return ["wipe timed out"]
        if self.kube.get("StatefulSet", self.owner.namespace, sts_name) is not None:
            self.kube.delete("StatefulSet", self.owner.namespace, sts_name, propagation="Background")
            raise Waiting("stopping the servers before removing their storage")
        if pods:
            raise Waiting(f"{len(pods)} server pods still stopping")
        return self.run_wipes(inputs, jobs)

    def schedule_wipes(self, inputs: m.BuildInputs, where: dict[str, str]) -> None:
        """A suspended wipe Job for each server pod name in `where`, on its node, unless it has one."""
        for name, node in sorted(where.items()):
            job_name = naming.wipe_job(self.owner.name, name)
            if self.kube.get("Job", self.owner.namespace, job_name) is None:
                self.kube.apply(objs.wipe_job(inputs, name, node, suspend=True))
                self.post(self.body, "Normal", "WipeScheduled",
                          f"Job {job_name} will remove {name}'s hostPath data on {node}")

    def run_wipes(self, inputs: m.BuildInputs, jobs: list[dict[str, Any]]) -> list[str]:
        """The suspended wipe Jobs resumed; Waiting until every one has finished, then what they did."""
        states = {}
        for job in jobs:
            state = job_state(job)
            if state == "suspended":
                pod_spec = job["spec"]["template"]["spec"]
                pod_name = pod_spec["containers"][0]["command"][-1].rsplit("/", 1)[-1]
                self.kube.apply(objs.wipe_job(inputs, pod_name, pod_spec["nodeName"], suspend=False))
                state = "running"
            states[job["metadata"]["name"]] = state
        if any(s in ("running", "missing") for s in states.values()):
            raise Waiting(f"wipe Jobs running: {sorted(n for n, s in states.items() if s == 'running')}")
        failed = sorted(n for n, s in states.items() if s == "failed")
        if failed:
            self.post(self.body, "Warning", "WipeFailed", f"Jobs {failed} failed: their hostPath data may remain")
        done = sorted(n for n, s in states.items() if s == "succeeded")
        if done:
            self.post(self.body, "Normal", "StorageWiped", f"hostPath data removed by {done}")
        return [f"wiped by {done}", *([f"failed: {failed}"] if failed else [])]

    def release_volumes(self) -> list[str]:
        """Delete the cluster's hostPath PersistentVolumes (cluster-scoped, so no owner reference does).
        Their directories stay (reclaim policy Retain; the wipe Jobs remove them under reclaimPolicy
        Delete), and the API server keeps each volume until its claim, which goes with the StatefulSet,
        is gone (pv-protection)."""
        names = sorted(pv["metadata"]["name"] for pv in self.volumes())
        for name in names:
            self.kube.delete("PersistentVolume", "", name)
        if not names:
            return []
        self.post(self.body, "Normal", "VolumesDeleted", f"PersistentVolumes {names} deleted; the directories they "
                  "held follow reclaimPolicy")
        return [f"deleted PersistentVolumes {names}"]
