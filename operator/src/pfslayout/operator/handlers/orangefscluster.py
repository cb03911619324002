"""Kopf entry points for OrangeFSCluster: the level-triggered apply through `leveltriggered` (create,
update, resume, and the resync timer), the deletion steps, the server StatefulSet's events and a timer over the
pods of clusters not Ready (one stuck on its image) — thin
functions over `reconcilers.orangefscluster`, registered by `register` with the process's settings."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from pfslayout import metrics
from pfslayout.kinds import MANAGED_BY
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.orangefscluster.meta import CLUSTER_LABEL
from pfslayout.operator import enrollment, scope
from pfslayout.operator.handlers import leveltriggered
from pfslayout.operator.reconcilers import orangefscluster as reconciler
from pfslayout.operator.runtime import context, kube
from pfslayout.operator.settings import Settings

KIND = OFS.kind
# The phases whose server pods are looked at every PFSLAYOUT_SERVER_POLL_SECONDS (on_servers_not_ready).
NOT_READY = frozenset({"Provisioning", "Degraded"})


def _describe(outcome: reconciler.Outcome) -> str:
    changes = "".join(f"; {kind} {name} {action}" for kind, name, action in outcome.changes)
    return f"phase {outcome.status['phase']}, {outcome.status['readyServers']}/{outcome.status['servers']} " \
           f"servers Ready{changes}"


def _cleanup(body: kopf.Body, logger: Any, step: Callable[[], list[str]]) -> None:
    """Log a deletion step's notes; when the operator may no longer write in the namespace (it is being
    deleted, or its RoleBinding is gone) let the deletion finish with a warning instead of holding the
    finalizer, and the namespace, forever (enrollment.cleanup_forbidden)."""
    try:
        notes = step()
    except ApiException as err:
        if not enrollment.forbidden(err):
            raise
        logger.warning(enrollment.cleanup_forbidden(body.meta.namespace or "", body.meta.name or "", err))
        return
    for note in notes:
        logger.info(note)


def register(s: Settings) -> None:
    # The create/update/resume apply and a timer that undoes drift nobody announced (a child edited or
    # deleted by hand), once the object has been left alone for half the period.
    leveltriggered.register(OFS, reconciler.reconcile, s, _describe, period_s=s.resync_s, timer="resync",
                            idle_s=s.resync_s / 2, log_level=logging.INFO)

    def on_delete(body: kopf.Body, logger: Any, **_: Any) -> None:
        _cleanup(body, logger, lambda: reconciler.mark_terminating(context(s), dict(body)))

    def on_delete_wipe(body: kopf.Body, logger: Any, runtime: Any, **_: Any) -> None:
        """Runs after `cleanup`; only does something for hostPath storage with reclaimPolicy Delete."""
        def wipe() -> list[str]:
            try:
                return reconciler.wipe_hostpath(context(s), dict(body), runtime.total_seconds())
            except reconciler.Waiting as wait:
                raise kopf.TemporaryError(str(wait), delay=2) from None
        _cleanup(body, logger, wipe)

    def on_delete_volumes(body: kopf.Body, logger: Any, **_: Any) -> None:
        """Runs after `wipe-hostpath`: the hostPath servers' PersistentVolumes, cluster-scoped, go too."""
        _cleanup(body, logger, lambda: reconciler.release_volumes(context(s), dict(body)))

    def on_server_statefulset(event: Mapping[str, Any], body: kopf.Body, logger: Any, **_: Any) -> None:
        """Server readiness changes show up on the StatefulSet's status: mirror them into the owner's
        status, and re-create the set when someone deleted it while its OrangeFSCluster lives on."""
        meta = body.get("metadata") or {}
        name = (meta.get("labels") or {}).get(CLUSTER_LABEL)
        namespace = meta.get("namespace")
        if not name or not namespace:
            return
        owner = kube().custom.get(OFS, namespace, name)
        if owner is None or (owner.get("metadata") or {}).get("deletionTimestamp"):
            return
        if event.get("type") == "DELETED":
            logger.info(f"server StatefulSet of {namespace}/{name} was deleted; re-creating it")
            reconciler.reconcile(context(s), owner)
            return
        reconciler.refresh_status(context(s), owner)

    def on_servers_not_ready(body: kopf.Body, **_: Any) -> None:
        """A server pod stuck on its image (ImagePullBackOff and the like: k8s.workloads.pod_failure) changes
        nothing on the StatefulSet, and the operator may not watch pods across namespaces (docs/rbac.md): while
        a cluster's servers are not all Ready, its status is refreshed from its pods every few seconds."""
        if not (body.get("metadata") or {}).get("deletionTimestamp"):
            reconciler.refresh_status(context(s), dict(body))

    # Kopf waits 60 s before retrying a handler that raised; an API hiccup should cost seconds, not a minute.
    # Every retried handler and timer sets it (test_operator_plumbing checks Kopf's registry).
    g, v, p, back, when = OFS.group, OFS.version, OFS.plural, s.retry_s, scope.in_scope
    kopf.on.delete(g, v, p, id="cleanup", backoff=back, when=when)(metrics.instrumented(KIND, "delete")(on_delete))
    kopf.on.delete(g, v, p, id="wipe-hostpath", backoff=back,
                   when=when)(metrics.instrumented(KIND, "delete-wipe")(on_delete_wipe))
    kopf.on.delete(g, v, p, id="release-volumes", backoff=back,
                   when=when)(metrics.instrumented(KIND, "delete-volumes")(on_delete_volumes))
    kopf.on.event("apps", "v1", "statefulsets",
                  labels={"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/component": "server",
                          CLUSTER_LABEL: kopf.PRESENT},
                  when=when)(metrics.instrumented(KIND, "statefulset-event")(on_server_statefulset))
    kopf.timer(g, v, p, id="servers-not-ready", interval=s.server_poll_s, backoff=back,
               when=lambda body, namespace, **_: scope.in_scope(namespace) and ((body.get("status") or {}).get(
                   "phase") in NOT_READY))(metrics.instrumented(KIND, "servers-not-ready")(on_servers_not_ready))
