"""The admission webhook's copy of the LayoutPolicies of every served namespace, kept by a watch thread in
every replica (policy_watch.py) and checked against a fresh LIST by the webhook's upkeep (upkeep.py), so an
admission never waits for the API server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class PolicyCache:
    """The LayoutPolicies of every namespace, as the last watch event or LIST showed them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_ns: dict[str, dict[str, dict[str, Any]]] = {}
        self.seeded = False

    def put(self, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        with self._lock:
            self._by_ns.setdefault(meta["namespace"], {})[meta["name"]] = body

    def replace(self, policies: list[dict[str, Any]]) -> None:
        """A fresh LIST as the whole copy (the watch that follows it starts from that LIST)."""
        fresh: dict[str, dict[str, dict[str, Any]]] = {}
        for p in policies:
            fresh.setdefault(p["metadata"]["namespace"], {})[p["metadata"]["name"]] = p
        with self._lock:
            self._by_ns = fresh
        self.seeded = True

    def drop(self, namespace: str, name: str) -> None:
        with self._lock:
            self._by_ns.get(namespace, {}).pop(name, None)

    def merge_listing(self, policies: list[dict[str, Any]], gone: Callable[[str, str], bool]) -> None:
        """A fresh LIST: policies missing here are added (the watch has not shown them yet); cached ones the
        LIST lacks are dropped when `gone(namespace, name)` confirms it (a GET answering 404), since the LIST
        may predate a creation the watch already delivered."""
        listed = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in policies}
        with self._lock:
            for p in policies:
                self._by_ns.setdefault(p["metadata"]["namespace"], {}).setdefault(p["metadata"]["name"], p)
            cached = [(ns, n) for ns, names in self._by_ns.items() for n in names]
        for ns, n in cached:
            if (ns, n) not in listed and gone(ns, n):
                self.drop(ns, n)
        self.seeded = True

    def in_namespace(self, namespace: str) -> list[dict[str, Any]] | None:
        """None until seeded (the caller then asks the API)."""
        if not self.seeded:
            return None
        with self._lock:
            return list(self._by_ns.get(namespace, {}).values())

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_ns.values())


POLICIES = PolicyCache()
