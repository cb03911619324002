"""The one shape every reconciler has: a `Context` handed in by the handler module, and a `Reconciler`
per call that holds the object being reconciled and writes its status in one place.

A reconciler is a subclass with named steps (methods, each one job) and an entry function of its module
that builds it on a fresh copy of the object (shared/locks.py). It never reads the environment or a
process global: what the process was configured with arrives in `Context.settings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pfslayout.k8s.api import Kube
from pfslayout.k8s.conditions import Event
from pfslayout.k8s.meta import Owner, owner_of
from pfslayout.k8s.resource import CustomResource
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy.learn import completion, label_selector
from pfslayout.operator.settings import Settings
from pfslayout.operator.shared.events import Post, post_all
from pfslayout.operator.shared.watched import Watched


def _no_requeue(seconds: float) -> None:
    """Outside the operator's daemons (the CLI, a test that drives steps itself) nobody calls again."""


@dataclass(frozen=True)
class Context:
    """What every reconciler works with: the API, the Event poster (Kopf's in the operator), the
    process's settings, read once at start-up (settings.py), and `requeue(seconds)`: call me again
    within that long — for work in flight that no watched change announces (a Job running, a retry
    pause). Without it an object is reconciled again only when something changes or its period ends
    (shared/wakeups.py)."""

    kube: Kube
    post: Post
    settings: Settings
    requeue: Callable[[float], None] = field(default=_no_requeue)
    # The operator's watch copies (shared/watched.py); None (tests, the CLI): every read goes to the API.
    watched: Watched | None = None

    def custom(self, resource: CustomResource, namespace: str, name: str) -> dict[str, Any] | None:
        """A custom object another kind owns (the policy's cluster, its calibration), as the operator's watch
        last showed it; from the API when the watch has not shown it."""
        if self.watched is not None and (seen := self.watched.get(resource.plural, namespace, name)) is not None:
            return seen
        return self.kube.custom.get(resource, namespace, name)

    def succeeded_mpijobs(self, namespace: str, selector: dict[str, Any]) -> list[dict[str, Any]]:
        """The succeeded MPIJobs `selector` selects: from the MPIJob watch in the operator, else a LIST
        (ApiException when the MPI Operator's CRD is missing)."""
        if self.watched is not None:
            return self.watched.succeeded(namespace, selector)
        return [j for j in self.kube.custom.list(MPIJOB, namespace, label_selector(selector))
                if completion(j) is not None]


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
