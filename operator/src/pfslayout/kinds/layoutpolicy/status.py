"""LayoutPolicy conditions, per-rule status merging and the Events a change deserves (pure).

Conditions: `Ready` (every valid rule's hints verified on the file system; reasons `Applied`,
`Applying`, `RuleInvalid` when some rules cannot be planned — the others still apply —, `ClusterNotReady`,
`HintJobFailed`), `Calibrated` (`Calibrated` with the CostCalibration used; `NoCalibration`,
`CalibrationNotFound`, `CalibrationNotReady` while the seeds' Ethernet defaults stand in), `Learned` (the
learning loop: `Learned` from the last traced MPIJob; `Disabled`, `WaitingForTrace`, `Collecting`,
`TraceUnreadable`, `NoMatchingRequests`, `MPIJobsUnavailable`).
"""

from __future__ import annotations

from typing import Any

from pfslayout.k8s.conditions import Event, EventPolicy, condition, transition_events

EVENT_POLICY = EventPolicy(troubled_phases=frozenset(),
                           warning_reasons=frozenset({"RuleInvalid", "ClusterNotReady", "HintJobFailed",
                                                      "CalibrationNotFound", "TraceUnreadable",
                                                      "MPIJobsUnavailable"}))


def conditions(ready: tuple[bool, str, str], calibrated: tuple[bool, str, str], generation: int, now: str,
               previous: dict[str, Any] | None, learned: tuple[bool, str, str] | None = None) -> list[dict[str, Any]]:
    prev = (previous or {}).get("conditions")
    out = [condition("Ready", *ready, generation, now, prev), condition("Calibrated", *calibrated, generation, now,
                                                                         prev)]
    if learned is not None:
        out.append(condition("Learned", *learned, generation, now, prev))
    return out


def _choice(rule: dict[str, Any]) -> Any:
    return (rule.get("decision"), rule.get("layout"), rule.get("replicas"))


def events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    """Condition transitions, and per rule: a new or changed decision, a rule that became invalid."""
    out = transition_events(old, new, EVENT_POLICY, new.get("summary") or "")
    before = {r.get("path"): r for r in old.get("rules") or []}
    for rule in new.get("rules") or []:
        prev = before.get(rule.get("path"))
        if rule.get("decision") and (prev is None or _choice(prev) != _choice(rule)):
            verb = "LayoutChosen" if prev is None or not prev.get("decision") else "DecisionChanged"
            out.append(Event("Normal", verb, f"{rule['path']}: {rule.get('message', '')}"[:1000]))
        invalid = not rule.get("decision") and not rule.get("applied") and rule.get("message", "").startswith("spec.")
        if invalid and (prev is None or prev.get("message") != rule.get("message")):
            out.append(Event("Warning", "RuleInvalid", rule["message"][:1000]))
    return out
