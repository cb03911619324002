"""The LayoutPolicy → planner adapter (pfslayout.planner.policy): every CRD name maps to the planner's,
checked against the generated CRD so the two cannot drift apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslayout.errors import InputError
from pfslayout.planner import SizeBin, WorkloadDescription, plan_workload
from pfslayout.planner.policy import SHARING, WORKLOAD_FIELDS, plan_inputs, workload_from_rule

ROOT = Path(__file__).resolve().parents[3]
CRD = yaml.safe_load((ROOT / "crds" / "layoutpolicies.yaml").read_text())
SPEC = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
RULE = SPEC["properties"]["rules"]["items"]
WORKLOAD = RULE["properties"]["auto"]["properties"]["workload"]


def _rule(**workload: Any) -> dict[str, Any]:
    return {"path": "/ckpt", "mode": "auto", "fileSharing": "shared",
            "auto": {"source": "workload", "workload": {"processes": 64} | workload}}


def test_every_crd_workload_field_has_its_planner_name() -> None:
    assert set(WORKLOAD["properties"]) == set(WORKLOAD_FIELDS)
    assert set(WORKLOAD_FIELDS.values()) <= set(WorkloadDescription.model_fields)


def test_every_crd_file_sharing_value_has_its_planner_value() -> None:
    assert set(RULE["properties"]["fileSharing"]["enum"]) == set(SHARING)
    assert RULE["properties"]["fileSharing"]["default"] == "perProcess"
    assert set(SHARING.values()) == {"file-per-process", "shared"}


def test_crd_defaults_are_the_planner_defaults() -> None:
    fields = WorkloadDescription.model_fields
    for key, name in WORKLOAD_FIELDS.items():
        default = WORKLOAD["properties"][key].get("default")
        if default is not None:
            assert fields[name].default == default, key
    assert SPEC["properties"]["hybridThreshold"]["default"] == plan_inputs({"rules": []}).delta


def test_a_rule_becomes_a_workload_description() -> None:
    w = workload_from_rule(_rule(procsPerNode=8, requestSizes=[{"size": 1048576, "weight": 3},
                                                                {"size": 4096, "weight": 1}],
                                 readFraction=0.9, randomFraction=0.25, requestsPerProcess=100))
    assert w == WorkloadDescription(name="/ckpt", processes=64, procs_per_node=8, sharing="shared",
                                    request_sizes=[SizeBin(size=1048576, weight=3), SizeBin(size=4096, weight=1)],
                                    read_fraction=0.9, random_fraction=0.25, requests_per_process=100)


def test_defaults_when_the_api_server_has_not_applied_them() -> None:
    rule = {"path": "/d", "mode": "auto", "auto": {"workload": {"processes": 4, "requestSize": 65536}}}
    w = workload_from_rule(rule)
    assert w.sharing == "file-per-process" and w.procs_per_node == 1 and w.read_fraction == 1.0
    assert [(b.size, b.weight) for b in w.request_sizes] == [(65536, 1.0)]


@pytest.mark.parametrize(("rule", "field"), [
    (_rule(requestSize=4096, procsPerNode=128), "spec.rules[0].auto.workload.procsPerNode"),
    (_rule(), "spec.rules[0].auto.workload.requestSize"),
    (_rule(requestSize=4096, requestSizes=[{"size": 1, "weight": 1}]), "spec.rules[0].auto.workload.requestSize"),
    (_rule(requestSize=4096, procs_per_node=2), "spec.rules[0].auto.workload.procs_per_node"),
    ({"path": "/d", "mode": "auto", "fileSharing": "file-per-process",
      "auto": {"workload": {"processes": 1, "requestSize": 1}}}, "spec.rules[0].fileSharing"),
    ({"path": "/d", "mode": "auto", "auto": {"source": "workload"}}, "spec.rules[0].auto.workload"),
])
def test_bad_rules_name_the_crd_field(rule: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        workload_from_rule(rule)
    assert err.value.field == field


def test_plan_inputs_of_a_policy_plan() -> None:
    accepted = yaml.safe_load((ROOT / "e2e" / "tests" / "invalid" / "accepted" / "layoutpolicy.yaml").read_text())
    inputs = plan_inputs(accepted["spec"])
    described = [r for r in accepted["spec"]["rules"]
                 if r["mode"] == "auto" and r["auto"].get("source", "workload") == "workload"]
    assert [w.name for w in inputs.workloads] == [r["path"] for r in described] and inputs.workloads
    assert inputs.variant == accepted["spec"]["costModel"]["variant"]
    plan = plan_workload(inputs.workloads, 4, variant=inputs.variant, delta=inputs.delta)
    assert [d.target for d in plan.decisions] == [w.name for w in inputs.workloads]


def test_the_removed_two_d_divisor_is_gone_from_the_crd() -> None:
    assert set(SPEC["properties"]["costModel"]["properties"]) == {"variant"}
