"""How reconcilers post Events: through a callable the handler module supplies (Kopf's `kopf.event`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pfslayout.k8s.conditions import Event

Post = Callable[[dict[str, Any], str, str, str], None]  # (body, type, reason, message)


def post_all(post: Post, body: dict[str, Any], events: Iterable[Event]) -> None:
    for event in events:
        post(body, event.type, event.reason, event.message)
