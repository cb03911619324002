"""The admission webhook's copy of the LayoutPolicies (policy_cache.py), kept by a watch of its own in every
replica (k8s/follow.py) — not by Kopf's: a standby replica's Kopf is paused by peering (docs/reliability.md),
yet it serves admissions, so its copy must follow every change as the leader's does. Namespaces the
operator does not serve are left out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pfslayout.k8s import follow
from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.admission.policy_cache import PolicyCache


def follower(cache: PolicyCache, served: Callable[[str], bool]) -> follow.Follower:
    def changed(body: dict[str, Any], deleted: bool) -> None:
        if deleted:
            cache.drop(str(body["metadata"]["namespace"]), str(body["metadata"]["name"]))
        else:
            cache.put(body)
    return follow.Follower(LP, cache.replace, changed, served)


def start(kube: Kube, cache: PolicyCache, served: Callable[[str], bool], timeout_s: int, retry_s: float
          ) -> threading.Event:
    """The watch thread started (a daemon); set the returned event to end it."""
    return follow.start(kube, follower(cache, served), timeout_s, retry_s)
