"""What every handler module shares in the operator process: the API client, the Event poster and the
reconcilers' context built from them."""

from __future__ import annotations

from typing import Any, cast

import kopf
from kubernetes import client

from pfslayout.k8s.api import Kube
from pfslayout.operator import settings
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.shared.clock import now
from pfslayout.operator.shared.watched import WATCHED

_kube: Kube | None = None


def kube() -> Kube:
    """The process's API client, created on first use: after `settings.startup` loaded the configuration."""
    global _kube
    if _kube is None:
        _kube = Kube()
    return _kube


def post(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
    """Post an Event about `body` (the events API refuses messages over 1 KiB)."""
    kopf.event(cast(kopf.Body, body), type=type_, reason=reason, message=message[:1024])


def post_direct(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
    """Post an Event through the API, for code outside Kopf's per-object tasks (the admission webhook):
    `kopf.event` finds its queue only inside those."""
    meta = body.get("metadata") or {}
    stamp = now()
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"generateName": "pfslayout-", "namespace": meta.get("namespace")},
             "involvedObject": {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
                                "name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid")},
             "type": type_, "reason": reason, "message": message[:1024], "count": 1,
             "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": "pfs-layout-operator"},
             "reportingComponent": "pfs-layout-operator",
             "reportingInstance": settings.current().reporting_instance}
    api: Any = client.CoreV1Api(kube().api_client)  # a dict body: the model's annotations do not admit it
    api.create_namespaced_event(meta.get("namespace"), event, _request_timeout=kube().timeout)


def context(s: settings.Settings) -> Context:
    """What the reconcilers are handed in this process: the API client, Kopf's Event poster, the settings."""
    return Context(kube(), post, s, watched=WATCHED)
