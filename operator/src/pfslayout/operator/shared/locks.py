"""One lock per custom object.

Kopf runs a kind's handlers and the event handlers of its children concurrently in its thread pool;
holding the object's lock around read-decide-write makes each see the status the other wrote (no
duplicate transition Events, no lost updates).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pfslayout.k8s.api import Kube
from pfslayout.k8s.resource import CustomResource

_locks: dict[tuple[str, str, str, str], threading.Lock] = {}
_guard = threading.Lock()


def object_lock(resource: CustomResource, namespace: str, name: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((resource.group, resource.plural, namespace, name), threading.Lock())


def with_fresh(kube: Kube, resource: CustomResource, body: dict[str, Any],
               step: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Run `step` on a fresh copy of the object under its lock: {} when it is gone (or replaced by a
    namesake), its status unchanged while it is being deleted."""
    meta = body["metadata"]
    with object_lock(resource, meta["namespace"], meta["name"]):
        fresh = kube.custom.get(resource, meta["namespace"], meta["name"])
        if fresh is None or (fresh.get("metadata") or {}).get("uid") != meta.get("uid"):
            return {}
        if (fresh.get("metadata") or {}).get("deletionTimestamp"):
            return dict(fresh.get("status") or {})
        return step(fresh)
