"""Status conditions and the Events their changes deserve, for any kind (pure).

A kind's status module says which phases are trouble and which reasons warn (`EventPolicy`); the
reconciler posts what `transition_events` returns, so a state change is reported exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def condition(type_: str, ok: bool, reason: str, message: str, generation: int, now: str,
              previous: list[dict[str, Any]] | None) -> dict[str, Any]:
    status = "True" if ok else "False"
    last = now
    for old in previous or []:
        if old.get("type") == type_ and old.get("status") == status:
            last = old.get("lastTransitionTime") or now  # unchanged status keeps its transition time
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "observedGeneration": generation, "lastTransitionTime": last}


@dataclass(frozen=True)
class Event:
    type: str  # "Normal" or "Warning"
    reason: str
    message: str


@dataclass(frozen=True)
class EventPolicy:
    """When a transition is a Warning: entering a troubled phase; a condition turning False while the
    phase is troubled, or with a reason that is always bad news."""

    troubled_phases: frozenset[str]
    warning_reasons: frozenset[str]


def transition_events(old: dict[str, Any], new: dict[str, Any], policy: EventPolicy, summary: str
                      ) -> list[Event]:
    """An Event for every state change: the phase (its message ends with `summary`), and each condition
    whose status or reason moved."""
    out: list[Event] = []
    if old.get("phase") != new.get("phase"):
        bad = new["phase"] in policy.troubled_phases
        out.append(Event("Warning" if bad else "Normal", f"Phase{new['phase']}",
                         f"phase {old.get('phase') or '(none)'} -> {new['phase']}: {summary}"))
    before = {x["type"]: x for x in old.get("conditions") or []}
    troubled = new.get("phase") in policy.troubled_phases
    posted: set[tuple[str, str]] = set()
    for cond in new.get("conditions") or []:
        prev = before.get(cond["type"])
        if (cond["reason"], cond["message"]) in posted:
            continue  # e.g. Ready and SpecApplied both saying ScaleDownRefused: one Event is enough
        if prev is None or prev.get("status") != cond["status"] or prev.get("reason") != cond["reason"]:
            posted.add((cond["reason"], cond["message"]))
            bad = cond["status"] != "True" and (troubled or cond["reason"] in policy.warning_reasons)
            out.append(Event("Warning" if bad else "Normal", cond["reason"],
                             f"{cond['type']}={cond['status']}: {cond['message']}"))
    return out
