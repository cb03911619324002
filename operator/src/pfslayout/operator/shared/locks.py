"""One lock per custom object.

Kopf runs a kind's handlers and the event handlers of its children concurrently in its thread pool;
holding the object's lock around read-decide-write makes each see the status the other wrote (no
duplicate transition Events, no lost updates).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pfslayout.k8s.api import Kube
from pfslayout.k8s.resource import CustomResource

_locks: dict[tuple[str, str, str, str], threading.Lock] = {}
_guard = threading.Lock()


def object_lock(resource: CustomResource, namespace: str, name: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((resource.group, resource.plural, namespace, name), threading.Lock())


@contextmanager
def locked_fresh(kube: Kube, resource: CustomResource, body: dict[str, Any]) -> Iterator[dict[str, Any] | None]:
    """Under the object's lock, a fresh copy of it (an event's body may be older than what a concurrent
    handler just wrote); None when it is gone or replaced by a namesake."""
    meta = body["metadata"]
    with object_lock(resource, meta["namespace"], meta["name"]):
        fresh = kube.custom.get(resource, meta["namespace"], meta["name"])
        yield fresh if fresh is not None and (fresh.get("metadata") or {}).get("uid") == meta.get("uid") else None


def with_fresh(kube: Kube, resource: CustomResource, body: dict[str, Any],
               step: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Run `step` on a fresh copy of the object under its lock: {} when it is gone (or replaced by a
    namesake), its status unchanged while it is being deleted."""
    with locked_fresh(kube, resource, body) as fresh:
        if fresh is None:
            return {}
        if (fresh.get("metadata") or {}).get("deletionTimestamp"):
            return dict(fresh.get("status") or {})
        return step(fresh)
