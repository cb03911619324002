"""A copy of one custom resource kind kept by a thread of its own: LIST (in pages), then WATCH from that
list's resourceVersion, again and again from the last version seen, until a watch fails (410 Gone: the
version is too old) — then LIST again; an error waits `retry_s` (doubled per failure in a row).

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
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.api import Kube
from pfslayout.k8s.resource import CustomResource

log = logging.getLogger("pfslayout.follow")

PAGE = 500  # objects per LIST page: one response (and its decoding) stays small however many there are


@dataclass(frozen=True)
class Follower:
    """What a copy does with what the API server shows: the served namespaces' objects only."""

    resource: CustomResource
    listed: Callable[[list[dict[str, Any]]], object]  # the whole listing: the copy replaced (result unused)
    changed: Callable[[dict[str, Any], bool], object]  # one object added/modified (False) or deleted (True)
    served: Callable[[str], bool]
    # what of each listed object is kept until `listed` runs: a kind read only in part (MPIJobs, whose pod
    # templates are kilobytes) keeps that part, so the listing is never held whole
    trim: Callable[[dict[str, Any]], dict[str, Any]] = lambda o: o


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


def watch_from(api: Any, f: Follower, version: str, timeout_s: int, stop: threading.Event) -> str | None:
    """One WATCH from `version` until the server ends it: the version to watch on from (bookmarks keep it
    fresh), or None when the copy must be listed again (410 Gone, an error, a stop)."""
    r = f.resource
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]
    try:
        for event in w.stream(api.list_cluster_custom_object, r.group, r.version, r.plural,
                              resource_version=version, allow_watch_bookmarks=True, timeout_seconds=timeout_s,
                              _request_timeout=timeout_s + 30):
            if stop.is_set():
                return None
            kind, body = event.get("type"), event.get("object") or {}
            meta = body.get("metadata") or {}
            if kind == "ERROR" or not isinstance(meta, dict):
                return None  # e.g. 410 Gone: list again
            version = str(meta.get("resourceVersion") or version)
            if kind in ("ADDED", "MODIFIED", "DELETED") and f.served(str(meta.get("namespace"))):
                f.changed(body, kind == "DELETED")
    except ApiException as err:
        if err.status == 410:  # the client raises the ERROR event of a version too old: list again at once
            return None
        raise
    finally:
        w.stop()
    return version


def follow(kube: Kube, f: Follower, timeout_s: int, stop: threading.Event) -> None:
    """One LIST, then WATCHes from it, one after the other, until one fails: the copy follows the API
    server (a watch the server ends after `timeout_s` goes on from where it was, without a new LIST)."""
    api: Any = client.CustomObjectsApi(kube.api_client)
    items: list[dict[str, Any]] = []
    version: str | None = None
    for page in pages(api, f.resource, kube.timeout):
        items += [f.trim(o) for o in page.get("items") or [] if f.served(str(o["metadata"]["namespace"]))]
        version = str(page["metadata"]["resourceVersion"])
    f.listed(items)
    del items
    while version and not stop.is_set():
        version = watch_from(api, f, version, timeout_s, stop)


def run_forever(kube: Kube, f: Follower, timeout_s: int, retry_s: float, stop: threading.Event) -> None:
    failures = 0
    while not stop.is_set():
        try:
            follow(kube, f, timeout_s, stop)
            failures = 0
        except Exception as err:  # an API hiccup (or the kind's CRD missing) must not end the copy
            # doubled per failure in a row, up to 16 times: a CRD that is missing for good (no MPI Operator)
            # costs a line a minute or so, not one every few seconds
            wait = retry_s * 2 ** min(failures, 4)
            failures += 1
            log.warning(f"{f.resource.kind} watch failed ({type(err).__name__}: {err}); listing again in "
                        f"{wait:g} s")
            stop.wait(wait)


def start(kube: Kube, f: Follower, timeout_s: int, retry_s: float) -> threading.Event:
    """The thread started (a daemon); set the returned event to end it."""
    stop = threading.Event()
    threading.Thread(target=run_forever, args=(kube, f, timeout_s, retry_s, stop),
                     name=f"pfslayout-watch-{f.resource.plural}", daemon=True).start()
    return stop
