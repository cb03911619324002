"""Layout planner: per directory/file, the cost of every candidate layout, the choice, the OrangeFS hints
that realise it, and a hybrid replica set when the best layouts are too close to call."""

from pfslayout.planner.candidates import useful_groups
from pfslayout.planner.decide import DEFAULT_DELTA
from pfslayout.planner.hints import hints_for
from pfslayout.planner.models import (
    CandidateCost,
    Decision,
    Hints,
    HybridRecommendation,
    Plan,
    Replica,
    SizeBin,
    WorkloadDescription,
)
from pfslayout.planner.plan import plan_trace, plan_workload
from pfslayout.planner.source import plan_from_file
from pfslayout.planner.workload import load_workloads

__all__ = [
    "DEFAULT_DELTA",
    "CandidateCost",
    "Decision",
    "Hints",
    "HybridRecommendation",
    "Plan",
    "Replica",
    "SizeBin",
    "WorkloadDescription",
    "hints_for",
    "load_workloads",
    "plan_from_file",
    "plan_trace",
    "plan_workload",
    "useful_groups",
]
