"""A copy of one custom resource kind kept by a thread of its own: LIST (in pages), then WATCH from that
list's resourceVersion until the stream ends or fails, then again; an error waits `retry_s`.

Used where Kopf's watch does not fit: the webhook's copy of the LayoutPolicies, which a standby replica
(Kopf paused by peering) must keep too (admission/policy_watch.py), and the MPIJobs the operator only needs
to hear of (handlers/wakeups.py) — Kopf's watch keeps a worker and a queue per object, which with thousands
of jobs costs memory for nothing (operator/bench/injection.py measures the process).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch

from pfslayout.k8s.api import Kube
from pfslayout.k8s.resource import CustomResource

log = logging.getLogger("pfslayout.follow")

PAGE = 500  # objects per LIST page: a large listing is never held whole


@dataclass(frozen=True)
class Follower:
    """What a copy does with what the API server shows: the served namespaces' objects only."""

    resource: CustomResource
    listed: Callable[[list[dict[str, Any]]], object]  # the whole listing: the copy replaced (result unused)
    changed: Callable[[dict[str, Any], bool], object]  # one object added/modified (False) or deleted (True)
    served: Callable[[str], bool]


def pages(api: Any, r: CustomResource, timeout: float) -> Iterator[dict[str, Any]]:
    """The LIST's pages; the last one's resourceVersion is the listing's."""
    token: str | None = None
    while True:
        page = api.list_cluster_custom_object(r.group, r.version, r.plural, limit=PAGE,
                                              **({"_continue": token} if token else {}), _request_timeout=timeout)
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def follow(kube: Kube, f: Follower, timeout_s: int, stop: threading.Event) -> None:
    """One LIST and one WATCH: the copy follows the API server until the watch ends."""
    api: Any = client.CustomObjectsApi(kube.api_client)
    items: list[dict[str, Any]] = []
    version = ""
    for page in pages(api, f.resource, kube.timeout):
        items += [o for o in page.get("items") or [] if f.served(str(o["metadata"]["namespace"]))]
        version = str(page["metadata"]["resourceVersion"])
    f.listed(items)
    del items
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]
    r = f.resource
    try:
        for event in w.stream(api.list_cluster_custom_object, r.group, r.version, r.plural,
                              resource_version=version, timeout_seconds=timeout_s,
                              _request_timeout=timeout_s + 30):
            if stop.is_set():
                return
            kind, body = event.get("type"), event.get("object") or {}
            meta = body.get("metadata") or {}
            if kind == "ERROR" or not isinstance(meta, dict):
                return  # e.g. 410 Gone: list again
            if kind in ("ADDED", "MODIFIED", "DELETED") and f.served(str(meta.get("namespace"))):
                f.changed(body, kind == "DELETED")
    finally:
        w.stop()


def run_forever(kube: Kube, f: Follower, timeout_s: int, retry_s: float, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            follow(kube, f, timeout_s, stop)
        except Exception as err:  # an API hiccup (or the kind's CRD missing) must not end the copy
            log.warning(f"{f.resource.kind} watch failed ({type(err).__name__}: {err}); listing again in "
                        f"{retry_s:g} s")
            stop.wait(retry_s)


def start(kube: Kube, f: Follower, timeout_s: int, retry_s: float) -> threading.Event:
    """The thread started (a daemon); set the returned event to end it."""
    stop = threading.Event()
    threading.Thread(target=run_forever, args=(kube, f, timeout_s, retry_s, stop),
                     name=f"pfslayout-watch-{f.resource.plural}", daemon=True).start()
    return stop
