"""The changes that wake a LayoutPolicy or CostCalibration (shared/wakeups.py): its OrangeFSCluster's, its
calibration's, and an MPIJob it selects succeeding. Each watch event also refreshes the operator's copy
(shared/watched.py) that the reconcilers read instead of the API. Clusters and calibrations come from
Kopf's watches; MPIJobs from Kopf's in suspend mode and from a thread of their own with the webhook
(`own_mpijob_watch`).

A wake needs a change that matters to the woken: the status writes of a calibration in progress, or Kopf's
own annotations on a cluster, wake nobody (`fingerprint`), so a busy neighbour does not make idle policies
reconcile.
"""

from __future__ import annotations

from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.k8s import follow
from pfslayout.k8s.api import Kube
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import MPIJOB
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.layoutpolicy.inject import selects
from pfslayout.kinds.layoutpolicy.learn import learning_enabled
from pfslayout.operator import scope
from pfslayout.operator.settings import Settings
from pfslayout.operator.shared.wakeups import WAKEUPS, Wakeups
from pfslayout.operator.shared.watched import WATCHED, Watched, slim


def fingerprint(body: dict[str, Any]) -> tuple[Any, ...]:
    """What dependents read of a cluster or calibration: its spec generation, phase, Ready condition,
    server count and the names it points to (the cluster's calibration, the calibration's ConfigMap)."""
    meta, st = body.get("metadata") or {}, body.get("status") or {}
    ready = next((c.get("status") for c in st.get("conditions") or [] if c.get("type") == "Ready"), None)
    return (meta.get("uid"), meta.get("generation"), meta.get("deletionTimestamp") is not None, st.get("phase"),
            ready, st.get("servers"), st.get("readyServers"), (st.get("calibrationRef") or {}).get("name"),
            st.get("configMapName"), st.get("run"), st.get("completionTime"))


def _ref(body: Any, field: str) -> str | None:
    return ((body.get("spec") or {}).get(field) or {}).get("name")


class Reactions:
    """Refresh the copy, then wake who depends on the change; the fingerprints seen per object."""

    def __init__(self, watched: Watched, wakeups: Wakeups) -> None:
        self.watched, self.wakeups = watched, wakeups
        self.seen: dict[tuple[str, str, str], tuple[Any, ...]] = {}

    def _changed(self, plural: str, body: dict[str, Any], deleted: bool) -> bool:
        meta = body.get("metadata") or {}
        key = (plural, str(meta.get("namespace")), str(meta.get("name")))
        if deleted:
            self.watched.drop(*key)
            self.seen.pop(key, None)
            return True
        self.watched.put(plural, body)
        now = fingerprint(body)
        if self.seen.get(key) == now:
            return False
        self.seen[key] = now
        return True

    def cluster(self, body: dict[str, Any], deleted: bool) -> list[tuple[str, str, str]]:
        """A cluster changed: the policies and calibrations on it."""
        if not self._changed(OFS.plural, body, deleted):
            return []
        ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
        on_it = lambda b: _ref(b, "clusterRef") == name  # noqa: E731
        return self.wakeups.wake_where(LP.plural, ns, on_it) + self.wakeups.wake_where(CC.plural, ns, on_it)

    def calibration(self, body: dict[str, Any], deleted: bool) -> list[tuple[str, str, str]]:
        """A calibration changed: the policies naming it, and those using their cluster's (no calibrationRef)."""
        if not self._changed(CC.plural, body, deleted):
            return []
        ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
        return self.wakeups.wake_where(LP.plural, ns, lambda b: _ref(b, "calibrationRef") in (name, None))

    def mpijob(self, body: dict[str, Any], deleted: bool) -> list[tuple[str, str, str]]:
        """An MPIJob succeeded: the learning policies that select it."""
        return self._learners(body) if self.watched.mpijob(body, deleted) else []

    def mpijobs_listed(self, jobs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        """A listing of the MPIJobs: the learning policies that select a job succeeded since the last."""
        return [key for job in self.watched.mpijobs_listed(jobs) for key in self._learners(job)]

    def _learners(self, body: dict[str, Any]) -> list[tuple[str, str, str]]:
        meta = body.get("metadata") or {}
        labels = meta.get("labels") or {}
        return self.wakeups.wake_where(LP.plural, str(meta.get("namespace")), lambda b: learning_enabled(
            dict(b.get("spec") or {})) and selects((b.get("spec") or {}).get("selector"), labels))


REACTIONS = Reactions(WATCHED, WAKEUPS)


def own_mpijob_watch(s: Settings) -> bool:
    """Whether MPIJobs are followed by a thread of their own (k8s/follow.py), not Kopf: in webhook mode
    Kopf does not watch MPIJobs at all (handlers/mpijob.py), and its watch would keep a worker and a queue
    per job for nothing but these wake-ups. In suspend mode Kopf watches them anyway (the injection)."""
    return s.webhook is not None


def start_mpijob_watch(kube: Kube, s: Settings) -> None:
    """The MPIJob watch thread started (by startup.py, once the API configuration is loaded)."""
    follower = follow.Follower(MPIJOB, REACTIONS.mpijobs_listed, REACTIONS.mpijob, scope.in_scope, trim=slim)
    follow.start(kube, follower, int(s.watch_server_timeout), s.retry_s)


def register(s: Settings) -> None:
    def handler(react: Any) -> Any:
        async def on_event(body: kopf.Body, type: str | None, **_: Any) -> None:
            react(dict(body), type == "DELETED")
        return on_event

    watched = [(OFS, REACTIONS.cluster), (CC, REACTIONS.calibration)]
    if not own_mpijob_watch(s):
        watched.append((MPIJOB, REACTIONS.mpijob))
    for resource, react in watched:
        kopf.on.event(resource.group, resource.version, resource.plural, id="wake-dependents",
                      when=lambda namespace, **_: scope.in_scope(namespace))(
            metrics.instrumented(resource.kind, "wake-dependents")(handler(react)))
