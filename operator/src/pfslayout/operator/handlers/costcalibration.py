"""Kopf entry points for CostCalibration: decorators over `reconcilers.costcalibration`, a few lines each.

The reconcile is level-triggered, so every cause calls the same function: create, update (spec or the
`pfslayout.io/recalibrate` annotation), resume after a restart, and a timer that drives running probe
jobs forward (and notices a cluster becoming Ready) without watching every MPIJob and pod.
"""

from __future__ import annotations

from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.operator.reconcilers import costcalibration as reconciler
from pfslayout.operator.runtime import kube, post
from pfslayout.operator.settings import seconds

KIND = CC.kind
POLL_S = seconds("PFSLAYOUT_CALIBRATION_POLL_SECONDS", 5)
BACKOFF_S = seconds("PFSLAYOUT_RETRY_SECONDS", 5)


def _reconcile(body: kopf.Body, logger: Any) -> None:
    status = reconciler.reconcile(kube(), dict(body), post)
    if status:
        cells = status.get("cells") or {}
        logger.debug(f"phase {status.get('phase')}, run {status.get('run')}, cells {cells.get('progress')}")


@kopf.on.create(CC.group, CC.version, CC.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "create")
def on_create(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.on.update(CC.group, CC.version, CC.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "update")
def on_update(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.on.resume(CC.group, CC.version, CC.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "resume")
def on_resume(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.timer(CC.group, CC.version, CC.plural, id="progress", interval=POLL_S, initial_delay=POLL_S)
@metrics.instrumented(KIND, "progress")
def on_progress(body: kopf.Body, logger: Any, **_: Any) -> None:
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return
    _reconcile(body, logger)
