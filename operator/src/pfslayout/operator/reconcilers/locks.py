"""One lock per custom object.

Kopf runs a kind's handlers and the event handlers of its children concurrently in its thread pool;
holding the object's lock around read-decide-write makes each see the status the other wrote (no
duplicate transition Events, no lost updates).
"""

from __future__ import annotations

import threading

from pfslayout.k8s.resource import CustomResource

_locks: dict[tuple[str, str, str, str], threading.Lock] = {}
_guard = threading.Lock()


def object_lock(resource: CustomResource, namespace: str, name: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault((resource.group, resource.plural, namespace, name), threading.Lock())
