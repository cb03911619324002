"""Whose probe jobs may run now (pure): one CostCalibration probes at a time.

A calibration measures the platform, and a second calibration probing at the same time is part of what it
measures: the demo's three automatic calibrations, run side by side on one node, fitted R² 0.61-0.83;
each alone, 0.78-0.93 (docs/operator.md, "One calibration probes at a time"). So, by default
(`PFSLAYOUT_CALIBRATION_PROBING=exclusive`), a calibration creates probe jobs only while no other
calibration has one, and calibrations waiting for the slot take it in the order their runs started
(status.startTime, then namespace and name): first come, first served, and a run between two of its own
probe jobs keeps its place.

Which calibrations count: those in the namespaces this operator serves, in phase Running. A calibration
whose probe job exists holds the slot whatever its phase says (its status may lag its jobs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MODES = ("exclusive", "concurrent")


@dataclass(frozen=True, order=True)
class Claim:
    """One calibration's place in the queue: ordered by when its run started, then by its name."""

    started: str  # RFC 3339 in UTC: orders as text
    namespace: str
    name: str

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def claim_of(body: dict[str, Any]) -> Claim | None:
    """The claim of a calibration whose run is under way (phase Running with a start time); else None."""
    status = body.get("status") or {}
    meta = body.get("metadata") or {}
    if status.get("phase") != "Running" or not status.get("startTime"):
        return None
    return Claim(str(status["startTime"]), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def waiting_for(me: Claim, others: list[Claim], probing: set[str]) -> str | None:
    """The calibration (namespace/name) ``me`` must wait for before creating a probe job, or None to go.

    ``others``: the claims of the other calibrations with a run under way; ``probing``: namespace/name of
    every calibration that has a probe job now (``me`` included when it has one)."""
    if me.ref in probing:
        return None  # it holds the slot already: its next job may follow its last
    holders = sorted(ref for ref in probing if ref != me.ref)
    if holders:
        return holders[0]
    earlier = sorted(c for c in others if c < me and c.ref != me.ref)
    return earlier[0].ref if earlier else None
