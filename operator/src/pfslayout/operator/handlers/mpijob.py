"""Kopf entry point for MPIJobs (the webhook-free injection, reconcilers/injection.py).

A raw event handler, not create/update handlers: those would store Kopf's bookkeeping annotations on
every MPIJob in the cluster, and a job no policy selects must stay exactly as its user wrote it."""

from __future__ import annotations

from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.kinds import MPIJOB
from pfslayout.operator.reconcilers import injection
from pfslayout.operator.runtime import kube, post


@kopf.on.event(MPIJOB.group, MPIJOB.version, MPIJOB.plural, id="inject-suspended",
               when=lambda body, **_: bool(((body.get("spec") or {}).get("runPolicy") or {}).get("suspend")))
@metrics.instrumented(MPIJOB.kind, "event")
def on_event(body: kopf.Body, type: str | None, logger: Any, **_: Any) -> None:
    if type == "DELETED":
        return
    outcome = injection.handle(kube(), dict(body), post)
    if outcome != "untouched":
        logger.info(f"shim injection: {outcome}")
