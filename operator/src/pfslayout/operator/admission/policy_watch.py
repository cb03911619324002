"""The admission webhook's copy of the LayoutPolicies (policy_cache.py), kept by a watch of its own in every
replica — not by Kopf's: a standby replica's Kopf is paused by peering (docs/reliability.md), yet it serves
admissions, so its copy must follow every change as the leader's does.

A thread: LIST (the copy replaced), then WATCH from that list's resourceVersion until the stream ends or
fails, then again; an error waits `retry_s`. Namespaces the operator does not serve are left out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch

from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.admission.policy_cache import PolicyCache

log = logging.getLogger("pfslayout.webhook")


def follow(kube: Kube, cache: PolicyCache, served: Callable[[str], bool], timeout_s: int,
           stop: threading.Event) -> None:
    """One LIST and one WATCH: the copy follows the API server until the watch ends."""
    api: Any = client.CustomObjectsApi(kube.api_client)
    listing = api.list_cluster_custom_object(LP.group, LP.version, LP.plural, _request_timeout=kube.timeout)
    cache.replace([p for p in listing.get("items") or [] if served(p["metadata"]["namespace"])])
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]
    try:
        for event in w.stream(api.list_cluster_custom_object, LP.group, LP.version, LP.plural,
                              resource_version=listing["metadata"]["resourceVersion"],
                              timeout_seconds=timeout_s, _request_timeout=timeout_s + 30):
            if stop.is_set():
                return
            kind, body = event.get("type"), event.get("object") or {}
            meta = body.get("metadata") or {}
            if kind == "ERROR" or not isinstance(meta, dict):
                return  # e.g. 410 Gone: list again
            if kind not in ("ADDED", "MODIFIED", "DELETED") or not served(str(meta.get("namespace"))):
                continue
            if kind == "DELETED":
                cache.drop(str(meta["namespace"]), str(meta["name"]))
            else:
                cache.put(body)
    finally:
        w.stop()


def run_forever(kube: Kube, cache: PolicyCache, served: Callable[[str], bool], timeout_s: int, retry_s: float,
                stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            follow(kube, cache, served, timeout_s, stop)
        except Exception as err:  # an API hiccup must not end the copy: logged, listed again
            log.warning(f"LayoutPolicy watch of the webhook failed ({type(err).__name__}: {err}); listing again "
                        f"in {retry_s:g} s")
            stop.wait(retry_s)


def start(kube: Kube, cache: PolicyCache, served: Callable[[str], bool], timeout_s: int, retry_s: float
          ) -> threading.Event:
    """The watch thread started (a daemon); set the returned event to end it."""
    stop = threading.Event()
    threading.Thread(target=run_forever, args=(kube, cache, served, timeout_s, retry_s, stop),
                     name="pfslayout-policy-watch", daemon=True).start()
    return stop
