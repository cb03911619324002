"""Kopf entry points for CostCalibration: the level-triggered `reconcilers.costcalibration.reconcile` on
create, update (spec or the `pfslayout.io/recalibrate` annotation), resume, and its daemon's alarm
(handlers/leveltriggered.py): every `PFSLAYOUT_CALIBRATION_POLL_SECONDS` (5) while probe jobs run, when
its cluster changes (becomes Ready, is scaled), and once per `PFSLAYOUT_RESYNC_SECONDS` (300) otherwise."""

from __future__ import annotations

from typing import Any

from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.operator.handlers import leveltriggered
from pfslayout.operator.reconcilers import costcalibration as reconciler
from pfslayout.operator.settings import Settings


def _describe(status: dict[str, Any]) -> str:
    return f"phase {status.get('phase')}, run {status.get('run')}, cells {(status.get('cells') or {}).get('progress')}"


def register(s: Settings) -> None:
    leveltriggered.register(CC, reconciler.reconcile, s, _describe, period_s=s.resync_s, driven=True)
