"""The one shape every reconciler has: a `Context` handed in by the handler module, and a `Reconciler`
per call that holds the object being reconciled and writes its status in one place.

A reconciler is a subclass with named steps (methods, each one job) and an entry function of its module
that builds it on a fresh copy of the object (shared/locks.py). It never reads the environment or a
process global: what the process was configured with arrives in `Context.settings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from pfslayout.k8s.api import Kube
from pfslayout.k8s.conditions import Event
from pfslayout.k8s.meta import Owner, owner_of
from pfslayout.k8s.resource import CustomResource
from pfslayout.operator.settings import Settings
from pfslayout.operator.shared.events import Post, post_all


@dataclass(frozen=True)
class Context:
    """What every reconciler works with: the API, the Event poster (Kopf's in the operator) and the
    process's settings, read once at start-up (settings.py)."""

    kube: Kube
    post: Post
    settings: Settings


class Reconciler:
    """One reconcile of one object: its owner reference, spec generation and the status it had."""

    resource: ClassVar[CustomResource]
    # The Events a status change deserves (kinds/<kind>/status.py's `events`).
    transitions: ClassVar[Callable[[dict[str, Any], dict[str, Any]], Iterable[Event]]]

    def __init__(self, ctx: Context, body: dict[str, Any]) -> None:
        self.ctx, self.kube, self.post = ctx, ctx.kube, ctx.post
        self.body = body
        self.meta: dict[str, Any] = body["metadata"]
        self.owner: Owner = owner_of(self.resource, body)
        self.generation = int(self.meta.get("generation") or 0)
        self.old: dict[str, Any] = dict(body.get("status") or {})

    def write(self, status: dict[str, Any]) -> dict[str, Any]:
        """The status writer: `status` over the stored one (one merge patch of the difference, nothing when
        they agree), an Event per transition, and the merged status returned and kept as `old`."""
        status = {**status, "observedGeneration": self.generation}
        self.kube.custom.replace_status(self.resource, self.owner.namespace, self.owner.name, self.old, status)
        post_all(self.post, self.body, type(self).transitions(self.old, status))
        self.old = {**self.old, **status}
        return self.old
