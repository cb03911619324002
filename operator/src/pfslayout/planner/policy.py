"""The one adapter from a LayoutPolicy spec (the CRD's names, crds/kinds.py) to the planner's inputs.

The CRD speaks Kubernetes camelCase and its own enum values (`fileSharing: perProcess`, `procsPerNode`,
`requestSizes: [{size, weight}]`); the planner speaks ``WorkloadDescription`` (`sharing:
"file-per-process"`, `procs_per_node`, ...). Every translation between the two lives here, so a name can
change on one side only together with this table (operator/tests/unit/test_planner_policy.py checks the
table against the generated CRD). Defaults are the CRD's, applied when the API server has not (a manifest
read from a file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from pfslayout.errors import InputError
from pfslayout.planner.decide import DEFAULT_DELTA
from pfslayout.planner.models import Sharing, WorkloadDescription

# LayoutPolicy rules[].fileSharing -> the planner's sharing
SHARING: dict[str, Sharing] = {"perProcess": "file-per-process", "shared": "shared"}
# LayoutPolicy rules[].auto.workload key -> WorkloadDescription field (requestSize/requestSizes both
# become request_sizes)
WORKLOAD_FIELDS: dict[str, str] = {
    "processes": "processes",
    "procsPerNode": "procs_per_node",
    "requestSize": "request_sizes",
    "requestSizes": "request_sizes",
    "readFraction": "read_fraction",
    "randomFraction": "random_fraction",
    "requestsPerProcess": "requests_per_process",
}
DEFAULT_FILE_SHARING = "perProcess"
DEFAULT_VARIANT = "corrected"


@dataclass(frozen=True)
class PolicyPlanInputs:
    """What ``plan_workload`` needs from one LayoutPolicy: the workloads of its `auto` rules that describe
    a workload, the cost-model variant and δ."""

    workloads: list[WorkloadDescription]
    variant: str
    delta: float


def workload_from_rule(rule: dict[str, Any], where: str = "spec.rules[0]") -> WorkloadDescription:
    """One `mode: auto`, `source: workload` rule as the planner's workload description (name = its path)."""
    auto = rule.get("auto") or {}
    raw = auto.get("workload")
    if not isinstance(raw, dict):
        raise InputError(f"{where}.auto.workload", "is required for a rule that costs a described workload",
                         "describe processes and requestSize (or requestSizes)")
    unknown = sorted(set(raw) - set(WORKLOAD_FIELDS))
    if unknown:
        raise InputError(f"{where}.auto.workload.{unknown[0]}", "is not a LayoutPolicy workload field",
                         f"use {', '.join(WORKLOAD_FIELDS)}")
    sharing_name = rule.get("fileSharing", DEFAULT_FILE_SHARING)
    if sharing_name not in SHARING:
        raise InputError(f"{where}.fileSharing", f"unknown value {sharing_name!r}", f"use {' or '.join(SHARING)}")
    if ("requestSize" in raw) == ("requestSizes" in raw):
        raise InputError(f"{where}.auto.workload.requestSize", "give exactly one of requestSize and requestSizes")
    sizes = ([{"size": raw["requestSize"], "weight": 1.0}] if "requestSize" in raw
             else [{"size": b.get("size"), "weight": b.get("weight")} for b in raw["requestSizes"]])
    fields: dict[str, Any] = {"name": rule.get("path", "workload"), "sharing": SHARING[sharing_name],
                              "request_sizes": sizes}
    for key, field in WORKLOAD_FIELDS.items():
        if key in raw and field != "request_sizes":
            fields[field] = raw[key]
    processes, per_node = raw.get("processes"), raw.get("procsPerNode", 1)
    if isinstance(processes, int) and isinstance(per_node, int) and per_node > processes:
        # the CRD's CEL rule, named as the CRD names it (the model would only say the object is invalid)
        raise InputError(f"{where}.auto.workload.procsPerNode", f"{per_node} exceeds processes ({processes})",
                         "procsPerNode counts the processes of one client node")
    try:
        return WorkloadDescription.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        back = {v: k for k, v in WORKLOAD_FIELDS.items() if k != "requestSize"}
        loc = [str(x) for x in first["loc"]]
        name = back.get(loc[0], loc[0]) if loc else "workload"
        raise InputError(f"{where}.auto.workload.{name}", first["msg"].lower()) from None


def plan_inputs(spec: dict[str, Any]) -> PolicyPlanInputs:
    """The planner's inputs from a LayoutPolicy ``spec``: one workload per `auto` rule with `source:
    workload` (rules costed from traces, explicit and hybrid rules need no plan from a description)."""
    workloads = []
    for i, rule in enumerate(spec.get("rules") or []):
        auto = rule.get("auto") or {}
        if rule.get("mode") == "auto" and auto.get("source", "workload") == "workload":
            workloads.append(workload_from_rule(rule, f"spec.rules[{i}]"))
    cost_model = spec.get("costModel") or {}
    return PolicyPlanInputs(workloads=workloads, variant=cost_model.get("variant", DEFAULT_VARIANT),
                            delta=float(spec.get("hybridThreshold", DEFAULT_DELTA)))
