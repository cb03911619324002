"""Kopf entry points for CostCalibration: the level-triggered `reconcilers.costcalibration.reconcile` on
create, update (spec or the `pfslayout.io/recalibrate` annotation), resume, and a timer every
`PFSLAYOUT_CALIBRATION_POLL_SECONDS` (5) that drives running probe jobs forward and notices a cluster
becoming Ready."""

from __future__ import annotations

from typing import Any

from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.operator.env import seconds
from pfslayout.operator.handlers.leveltriggered import register
from pfslayout.operator.reconcilers import costcalibration as reconciler
from pfslayout.operator.runtime import kube, post

POLL_S = seconds("PFSLAYOUT_CALIBRATION_POLL_SECONDS", 5)
BACKOFF_S = seconds("PFSLAYOUT_RETRY_SECONDS", 5)


def _describe(status: dict[str, Any]) -> str:
    return f"phase {status.get('phase')}, run {status.get('run')}, cells {(status.get('cells') or {}).get('progress')}"


register(CC, lambda body: reconciler.reconcile(kube(), body, post), POLL_S, BACKOFF_S, _describe)
