"""Kopf handler modules, one per kind; each `register(settings)` registers its handlers with Kopf (the
entry module, operator/main.py, calls them all). Importing them registers nothing."""

from __future__ import annotations

from pfslayout.operator.handlers import costcalibration, finalizers, layoutpolicy, mpijob, orangefscluster, wakeups
from pfslayout.operator.settings import Settings


def register(s: Settings) -> None:
    for module in (orangefscluster, costcalibration, layoutpolicy, mpijob, finalizers, wakeups):
        module.register(s)
