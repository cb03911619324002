"""FakeKube: a test double — an in-memory stand-in for the API server at the Kube boundary — never a
replacement for the e2e tier.

It overrides exactly the verbs the reconcilers reach (reconcilers/*.py, shared/apply_hints.py,
admission/suspend.py, reconcilers/trace_collector.py): `Kube.get`, `apply`, `delete`, `list`, `pod_log`
and `CustomObjects.get`, `list`, `list_all`, `create`, `delete`, `patch_status`, `patch` (merge patches
only); `CustomObjects.replace_status` is the real one, over the fake `patch_status`. Objects are dicts
keyed by (kind, namespace, name). Apply behaves like server-side apply by a single field manager that
owns everything it applies: the applied fields replace the previous ones, the server's metadata and the
status stay, and an apply that changes nothing keeps the resourceVersion (`unchanged`, as the real
`Kube.apply` reports it). Cluster-scoped objects (Nodes, PersistentVolumes) have the namespace "". No
controller runs: a test plays the StatefulSet (and scheduler), Job and MPI controllers with `roll_out`,
`finish_job` and `finish_mpijob`, adds Nodes with `add_node`, and `hint_log` plays a file system that
takes every hint. Nothing here talks to a network.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import itertools
import shlex
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.api import Change, Kube, LogUnreadable
from pfslayout.k8s.custom import CustomObjects
from pfslayout.k8s.resource import CustomResource
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.settings import load as load_settings
from pfslayout.orangefs import dirhints, relayout
from pfstestkit import REPO

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace, name)
STAMP = "2026-01-01T00:00:00Z"
POLICIES = REPO / "policies"
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp")
# What roll_out's scheduler says of a server pod it leaves Pending.
UNSCHEDULABLE = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules"


def example(file: str, kind: str) -> Obj:
    """The document of `kind` in a user-facing example manifest, policies/<file>."""
    docs = yaml.safe_load_all((POLICIES / file).read_text())
    return next(copy.deepcopy(d) for d in docs if d and d.get("kind") == kind)


def matches(obj: Obj, selector: str) -> bool:
    """Equality-based label selectors (`a=b,c=d`) and existence (`a`), the forms the reconcilers send."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    terms = [t.partition("=") for t in selector.split(",") if t]
    return all((k in labels) if not eq else labels.get(k) == v for k, eq, v in terms)


def merge(target: Obj, patch: Obj) -> Obj:
    """RFC 7386 merge patch of `target` in place: null deletes, objects merge, the rest replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def _content(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class FakeKube(Kube):
    def __init__(self) -> None:  # no super().__init__: no API client, no configuration, no network
        self.timeout = 0.0
        self.objects: dict[Key, Obj] = {}
        self.logs: dict[tuple[str, str], str] = {}  # (namespace, pod) -> its log
        self.unreadable: set[tuple[str, str]] = set()  # pods whose log read fails as a kubelet 5xx does
        self.applied: builtins.list[Obj] = []  # every apply's body, in order
        self.deleted: builtins.list[Key] = []  # every successful delete, in order
        self.status_patches: builtins.list[tuple[str, str, Obj]] = []  # (kind, name, patch)
        self._serial = itertools.count(1)
        self.custom: FakeCustom = FakeCustom(self)

    # ------------------------------------------------------------------------------- the store
    def store(self, obj: Obj, old: Obj | None) -> Obj:
        """Writes `obj` as the server would: identity kept, generation bumped on a change outside
        metadata and status, a new resourceVersion. Returns a copy, as a response would be."""
        meta = obj.setdefault("metadata", {})
        n = next(self._serial)
        if old is None:
            meta.update(uid=f"uid-{n}", creationTimestamp=STAMP, generation=1)
        else:
            meta.update({k: v for k, v in old["metadata"].items() if k in SERVER_FIELDS})
            if _content(obj) != _content(old):
                meta["generation"] = int(old["metadata"].get("generation") or 1) + 1
        meta["resourceVersion"] = str(n)
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
        return copy.deepcopy(obj)

    def put(self, obj: Obj) -> Obj:
        """Creates or overwrites any object (a test's set-up: pods, a cluster's status)."""
        meta = obj["metadata"]
        return self.store(copy.deepcopy(obj), self.objects.get((obj["kind"], meta.get("namespace", ""), meta["name"])))

    def add_node(self, name: str, labels: dict[str, str] | None = None, taints: builtins.list[Obj] | None = None,
                 unschedulable: bool = False, ready: bool = True) -> Obj:
        """A Node as the kubelet registers it (its hostname label set), with these labels and taints; its
        Ready condition `Unknown` when not `ready` (the kubelet gone silent)."""
        spec: Obj = {"taints": taints or []}
        if unschedulable:
            spec["unschedulable"] = True
        return self.put({"apiVersion": "v1", "kind": "Node", "spec": spec, "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}})

    def of_kind(self, kind: str) -> builtins.list[Obj]:
        return [copy.deepcopy(o) for (k, _, _), o in sorted(self.objects.items()) if k == kind]

    # ------------------------------------------------------------------------------- Kube's verbs
    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        obj = self.objects.get((kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def apply(self, obj: Obj) -> Change:
        meta = obj["metadata"]
        old = self.objects.get((obj["kind"], meta.get("namespace", ""), meta["name"]))
        self.applied.append(copy.deepcopy(obj))
        new = copy.deepcopy(obj)
        if old is None:
            return Change(self.store(new, None), "created")
        new["metadata"].update({k: v for k, v in old["metadata"].items() if k in SERVER_FIELDS})
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        if new == old:
            return Change(copy.deepcopy(old), "unchanged")
        return Change(self.store(new, old), "updated")

    def delete(self, kind: str, namespace: str, name: str, propagation: str | None = None) -> bool:
        if self.objects.pop((kind, namespace, name), None) is None:
            return False
        self.deleted.append((kind, namespace, name))
        return True

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        old = self.objects.get((kind, namespace, name))
        if old is None:
            raise ApiException(status=404, reason="Not Found")
        new = copy.deepcopy(old)
        new.setdefault("spec", {})["replicas"] = replicas
        self.store(new, old)

    def list(self, kind: str, namespace: str, label_selector: str) -> builtins.list[Obj]:
        return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.objects.items())
                if k == kind and ns == namespace and matches(o, label_selector)]

    def pod_log(self, namespace: str, name: str, container: str | None = None, tail_lines: int | None = None
                ) -> str | None:
        if (namespace, name) in self.unreadable:
            raise LogUnreadable(namespace, name, ApiException(status=503, reason="Service Unavailable"))
        if ("Pod", namespace, name) not in self.objects:
            return None
        return self.logs.get((namespace, name))

    # ------------------------------------------------------------------------------- the controllers
    def roll_out(self, namespace: str, statefulset: str, ready: int | None = None,
                 node: str | None = None, nodes: builtins.list[str] | None = None) -> builtins.list[str]:
        """The StatefulSet controller, the scheduler and the kubelets: the rollout done, one pod per replica
        from the template (the first `ready` of them Ready, all by default), on `node`, or on `nodes[i]`
        where '' leaves pod i Pending, unschedulable (UNSCHEDULABLE) and not Ready. Returns the pods' names."""
        sts = self.objects[("StatefulSet", namespace, statefulset)]
        replicas = int(sts["spec"].get("replicas", 1))
        ready = replicas if ready is None else ready
        sts["status"] = {"observedGeneration": sts["metadata"]["generation"], "replicas": replicas,
                         "updatedReplicas": replicas, "readyReplicas": ready, "currentRevision": "r1",
                         "updateRevision": "r1"}
        names = [f"{statefulset}-{i}" for i in range(replicas)]
        for i, name in enumerate(names):
            labels = sts["spec"]["template"]["metadata"]["labels"]
            where = nodes[i] if nodes is not None else node
            conditions = [{"type": "Ready", "status": str(i < ready and where != "")}]
            if where == "":
                conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                   "message": UNSCHEDULABLE})
            self.put({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                      "spec": {"nodeName": where} if where else {},
                      "status": {"conditions": conditions}})
        return names

    def finish_job(self, namespace: str, name: str, ok: bool, log: str = "", reason: str = "BackoffLimitExceeded"
                   ) -> None:
        """The Job controller: the Job Complete or Failed, its pod (label job-name) with `log`."""
        job = self.objects[("Job", namespace, name)]
        cond = {"type": "Complete", "status": "True"} if ok else {"type": "Failed", "status": "True",
                                                                   "reason": reason, "message": reason}
        job["status"] = {"conditions": [cond], **({"succeeded": 1} if ok else {"failed": 1})}
        self._pod(namespace, f"{name}-pod", {"job-name": name}, log)

    def finish_mpijob(self, namespace: str, name: str, ok: bool, log: str = "", message: str = "",
                      worker_nodes: tuple[str, ...] = ()) -> None:
        """The MPI Operator: the MPIJob Succeeded or Failed, its launcher pod with `log`, and one worker
        pod on each of `worker_nodes` (the scheduler's choice)."""
        job = self.objects[("MPIJob", namespace, name)]
        job["status"] = {"conditions": [{"type": "Succeeded" if ok else "Failed", "status": "True",
                                         "reason": "MPIJobSucceeded" if ok else "MPIJobFailed", "message": message}]}
        self._pod(namespace, f"{name}-launcher", {"training.kubeflow.org/job-name": name,
                                                  "training.kubeflow.org/job-role": "launcher"}, log)
        for i, node in enumerate(worker_nodes):
            self._pod(namespace, f"{name}-worker-{i}", {"training.kubeflow.org/job-name": name,
                                                        "training.kubeflow.org/job-role": "worker"}, "", node)

    def _pod(self, namespace: str, name: str, labels: dict[str, str], log: str, node: str = "") -> None:
        pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                                     "labels": labels}}
        if node:
            pod["spec"] = {"nodeName": node}
        self.put(pod)
        self.logs[(namespace, name)] = log


class Events:
    """The reconcilers' `post` callable (Kopf's `kopf.event` in the operator): records every Event."""

    def __init__(self) -> None:
        self.posted: builtins.list[tuple[str, str, str]] = []  # (type, reason, message)

    def __call__(self, body: Obj, type_: str, reason: str, message: str) -> None:
        self.posted.append((type_, reason, message))

    def reasons(self) -> builtins.list[str]:
        return [reason for _, reason, _ in self.posted]

    def message(self, reason: str) -> str:
        """The message of the last Event with `reason` ('' when none was posted)."""
        return next((m for _, r, m in reversed(self.posted) if r == reason), "")


def context(kube: FakeKube, events: Events, **settings: Any) -> Context:
    """The reconcilers' context over the fake: the operator's default settings (an empty environment),
    with the fields named in `settings` replaced."""
    return Context(kube, events, dataclasses.replace(load_settings({}), **settings))


def hint_log(job: Obj) -> str:
    """What a hint Job's script (orangefs/dirhints.py) prints on a file system that takes every hint:
    each hint set and read back as asked, each check file with the datafiles its hints ask for, each
    scanned directory with no stale file."""
    out: builtins.list[str] = []
    for line in job["spec"]["template"]["spec"]["containers"][0]["command"][-1].splitlines():
        if not line.startswith("if mkdir_p "):
            continue
        lex = shlex.shlex(line, posix=True, punctuation_chars=";")
        lex.whitespace_split = True
        words = builtins.list(lex)
        path, hints = words[2], {}
        for i, word in enumerate(words):
            if word == "hint":
                hints[words[i + 2]] = words[i + 3]
                out.append("\t".join((dirhints.MARK, path, words[i + 2], words[i + 3], "set")))
            elif word == "check_file":
                want = dirhints.expected_datafiles(hints)
                out.append(f"{dirhints.DIST_MARK}\t{path}\t{'unknown' if want is None else want}")
            elif word.startswith("relayout_") and word.endswith("=1"):
                out.append(f"{relayout.COUNT_MARK}\t{path}\t0\t0")
    return "\n".join(out) + "\n"


class FakeCustom(CustomObjects):
    def __init__(self, kube: FakeKube) -> None:  # no super().__init__: no API client
        self.kube = kube
        self.timeout = 0.0

    def get(self, resource: CustomResource, namespace: str, name: str) -> Obj | None:
        return self.kube.get(resource.kind, namespace, name)

    def list(self, resource: CustomResource, namespace: str, label_selector: str = "") -> builtins.list[Obj]:
        return self.kube.list(resource.kind, namespace, label_selector)

    def list_all(self, resource: CustomResource, label_selector: str = "") -> builtins.list[Obj]:
        return [o for o in self.kube.of_kind(resource.kind) if matches(o, label_selector)]

    def create(self, resource: CustomResource, namespace: str, body: Obj) -> Obj | None:
        if (resource.kind, namespace, body["metadata"]["name"]) in self.kube.objects:
            return None
        obj = copy.deepcopy(body)
        obj["metadata"]["namespace"] = namespace
        return self.kube.store(obj, None)

    def delete(self, resource: CustomResource, namespace: str, name: str) -> bool:
        return self.kube.delete(resource.kind, namespace, name)

    def patch_status(self, resource: CustomResource, namespace: str, name: str, status: Obj,
                     resource_version: str | None = None) -> Obj | None:
        old = self.kube.objects.get((resource.kind, namespace, name))
        if old is None or (resource_version is not None and old["metadata"]["resourceVersion"] != resource_version):
            if resource_version is not None:
                return None
            raise ApiException(status=404, reason="Not Found")
        self.kube.status_patches.append((resource.kind, name, copy.deepcopy(status)))
        new = copy.deepcopy(old)
        merge(new.setdefault("status", {}), status)
        return self.kube.store(new, old)

    def patch(self, resource: CustomResource, namespace: str, name: str,
              body: Obj | builtins.list[Obj]) -> Obj | None:
        if isinstance(body, builtins.list):
            raise NotImplementedError("JSON Patch (suspend mode's injection) is not faked")
        old = self.kube.objects.get((resource.kind, namespace, name))
        if old is None:
            return None
        return self.kube.store(merge(copy.deepcopy(old), body), old)


def ready_cluster(kube: FakeKube, file: str, namespace: str, name: str) -> None:
    """The OrangeFSCluster of example `file`, reconciled and rolled out to Ready by its own reconciler (what
    a CostCalibration or LayoutPolicy waits for)."""
    from pfslayout.kinds import ORANGEFS_CLUSTER

    assert kube.custom.create(ORANGEFS_CLUSTER, namespace, example(file, "OrangeFSCluster")) is not None
    assert roll_out_cluster(kube, namespace, name)["phase"] == "Ready"


def roll_out_cluster(kube: FakeKube, namespace: str, name: str) -> Obj:
    """The stored OrangeFSCluster `name` reconciled by its own reconciler, its servers rolled out, and its
    status refreshed from them (what it then says)."""
    from pfslayout import naming
    from pfslayout.kinds import ORANGEFS_CLUSTER
    from pfslayout.operator.reconcilers import orangefscluster

    cluster = kube.custom.get(ORANGEFS_CLUSTER, namespace, name)
    assert cluster is not None
    orangefscluster.reconcile(context(kube, Events()), cluster)
    kube.roll_out(namespace, naming.server_statefulset(name))
    cluster = kube.custom.get(ORANGEFS_CLUSTER, namespace, name)
    assert cluster is not None
    status = orangefscluster.refresh_status(context(kube, Events()), cluster)
    assert status is not None
    return status
