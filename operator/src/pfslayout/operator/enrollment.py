"""A served namespace the operator holds no rights in (docs/rbac.md, "Enrolling a namespace").

A glob in `operator.watchNamespaces` makes Kopf serve every matching namespace, but the operator's
rights there come from a RoleBinding its admin creates. Until then every write the reconcile needs is
refused (403); retrying every few seconds cannot fix that, and the bare API error does not say what
would. The object's own status can still be written (the cluster-wide rights cover the pfslayout.io
kinds), so it gets a condition with the command, and the retry slows to once a minute.
The chart sets PFSLAYOUT_NAMESPACE_ROLE and PFSLAYOUT_SERVICE_ACCOUNT so the command is the exact one.
"""

from __future__ import annotations

import contextlib
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.api import Kube, api_message
from pfslayout.k8s.conditions import condition
from pfslayout.k8s.resource import CustomResource
from pfslayout.operator import settings
from pfslayout.operator.shared.clock import now

REASON = "NamespaceNotEnrolled"


def forbidden(err: BaseException) -> bool:
    return isinstance(err, ApiException) and err.status == 403


def message(namespace: str, err: ApiException) -> str:
    """The fix, then the API server's own words (which verb on which resource was refused)."""
    role, account = settings.current().namespace_role, settings.current().service_account
    detail = api_message(err)
    return (f"the operator has no rights in namespace {namespace}: enroll it with `kubectl -n {namespace} "
            f"create rolebinding pfs-layout-operator --clusterrole={role} --serviceaccount={account}` "
            f"(API server: {detail or 'forbidden'})")


def stalled(kube: Kube, resource: CustomResource, body: dict[str, Any], err: ApiException) -> kopf.TemporaryError:
    """Record the condition on the object (best effort) and return the slow retry to raise."""
    meta = body.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    text = message(namespace, err)
    status = body.get("status") or {}
    previous = list(status.get("conditions") or [])
    ready = condition("Ready", False, REASON, text, int(meta.get("generation") or 0), now(), previous)
    conditions = [c for c in previous if c.get("type") != "Ready"] + [ready]
    # The status is a courtesy: the retry below and Kopf's log line carry the same text.
    with contextlib.suppress(ApiException):
        kube.custom.patch_status(resource, namespace, name, {"conditions": conditions})
    return kopf.TemporaryError(text, delay=settings.current().forbidden_retry_s)


def cleanup_forbidden(namespace: str, name: str, err: ApiException) -> str:
    """Why a deletion goes ahead without its cleanup. Deleting a namespace deletes the operator's
    RoleBinding there along with everything else, and a terminating namespace refuses new objects (the
    wipe Jobs): retrying would hold the object's finalizer, and with it the namespace, forever. What the
    cleanup would have removed goes with the namespace, except hostPath data on the nodes."""
    return (f"cannot clean up {namespace}/{name}: the operator may no longer write in namespace {namespace} "
            f"(being deleted, or its RoleBinding gone): letting the deletion finish; with hostPath storage the "
            f"servers' directories stay on their nodes (API server: {api_message(err) or 'forbidden'})")
