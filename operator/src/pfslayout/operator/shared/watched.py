"""What the operator's watches last showed: OrangeFSClusters and CostCalibrations (whole bodies) and the
MPIJobs that succeeded (a slim copy each), kept by handlers/wakeups.py (from Kopf's watches, and for MPIJobs
in webhook mode a watch thread of its own, k8s/follow.py) and read by
the reconcilers through `Context.custom` and `Context.succeeded_mpijobs` — so a LayoutPolicy's reconcile
reads its cluster and calibration from memory instead of a GET each, and its learning loop finds the
finished jobs without a LIST per policy.

A miss is not an answer: `custom` falls back to the API when the object was never seen (the watch may not
have listed it yet); a watched deletion drops the copy, so a deleted object is not served.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from pfslayout.kinds.layoutpolicy.inject import INJECTED, selects
from pfslayout.kinds.layoutpolicy.learn import completion

Key = tuple[str, str, str]  # (plural, namespace, name)


def slim(job: dict[str, Any]) -> dict[str, Any]:
    """What the learning loop reads of a succeeded MPIJob: identity, labels, the policy that injected it and
    its Succeeded condition (a full MPIJob carries its pod templates: kilobytes each)."""
    meta = job.get("metadata") or {}
    injected = (meta.get("annotations") or {}).get(INJECTED)
    return {"apiVersion": job.get("apiVersion"), "kind": job.get("kind"),
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                         "labels": dict(meta.get("labels") or {}),
                         **({"annotations": {INJECTED: injected}} if injected else {})},
            "status": {"conditions": [c for c in (job.get("status") or {}).get("conditions") or []
                                      if c.get("type") == "Succeeded"],
                       **({"completionTime": job["status"]["completionTime"]}
                          if (job.get("status") or {}).get("completionTime") else {})}}


class Watched:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[Key, dict[str, Any]] = {}
        self._succeeded: dict[str, dict[str, dict[str, Any]]] = {}  # namespace -> uid -> slim MPIJob

    def put(self, plural: str, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        with self._lock:
            self._objects[(plural, str(meta.get("namespace")), str(meta.get("name")))] = copy.deepcopy(body)

    def drop(self, plural: str, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.pop((plural, namespace, name), None)

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of the last body seen (None when never seen, or deleted)."""
        with self._lock:
            body = self._objects.get((plural, namespace, name))
        return copy.deepcopy(body) if body is not None else None

    def mpijob(self, body: dict[str, Any], deleted: bool) -> bool:
        """Record an MPIJob event; True when it is a succeeded job seen for the first time."""
        meta = body.get("metadata") or {}
        ns, uid = str(meta.get("namespace")), str(meta.get("uid"))
        with self._lock:
            jobs = self._succeeded.setdefault(ns, {})
            if deleted or completion(body) is None:
                jobs.pop(uid, None)
                return False
            new = uid not in jobs
            jobs[uid] = slim(body)
            return new

    def mpijobs_listed(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A fresh LIST as the whole record of succeeded jobs (a deletion missed while a watch was down is
        forgotten); the succeeded jobs not seen before."""
        fresh: dict[str, dict[str, dict[str, Any]]] = {}
        for job in jobs:
            if completion(job) is not None:
                meta = job["metadata"]
                fresh.setdefault(str(meta.get("namespace")), {})[str(meta.get("uid"))] = slim(job)
        with self._lock:
            new = [j for ns, by_uid in fresh.items() for uid, j in by_uid.items()
                   if uid not in self._succeeded.get(ns, {})]
            self._succeeded = fresh
        return new

    def succeeded(self, namespace: str, selector: dict[str, Any]) -> list[dict[str, Any]]:
        """The succeeded MPIJobs of `namespace` that `selector` (a LabelSelector) selects."""
        with self._lock:
            jobs = list(self._succeeded.get(namespace, {}).values())
        return [copy.deepcopy(j) for j in jobs if selects(selector, j["metadata"].get("labels") or {})]


WATCHED = Watched()  # the operator process's
