"""The generic Kubernetes parts take the kind as data: owner references and child metadata for any
custom resource, and transition Events under a kind's own policy."""

from __future__ import annotations

import pytest

from pfslayout.k8s.conditions import EventPolicy, transition_events
from pfslayout.k8s.meta import Owner, object_metadata, owner_of
from pfslayout.kinds import COST_CALIBRATION, LAYOUT_POLICY, ORANGEFS_CLUSTER

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("resource", [ORANGEFS_CLUSTER, COST_CALIBRATION, LAYOUT_POLICY], ids=lambda r: r.kind)
def test_owner_reference_names_the_owners_kind(resource) -> None:  # noqa: ANN001
    owner = owner_of(resource, {"metadata": {"name": "a", "namespace": "ns", "uid": "u-1"}})
    assert owner == Owner(resource, "a", "ns", "u-1")
    assert owner.reference() == {"apiVersion": "pfslayout.io/v1alpha1", "kind": resource.kind, "name": "a",
                                 "uid": "u-1", "controller": True, "blockOwnerDeletion": True}
    meta = object_metadata(owner, "a-child", {"app": "x"})
    assert meta == {"name": "a-child", "namespace": "ns", "labels": {"app": "x"},
                    "ownerReferences": [owner.reference()]}


def test_transition_events_follow_the_kinds_policy() -> None:
    policy = EventPolicy(troubled_phases=frozenset({"Failed"}), warning_reasons=frozenset({"Bad"}))
    new = {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False", "reason": "Other",
                                              "message": "m"}]}
    events = transition_events({}, new, policy, "0/1 done")
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "PhaseFailed", "phase (none) -> Failed: 0/1 done"),
        ("Warning", "Other", "Ready=False: m")]
    calm = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False", "reason": "Bad", "message": "m"},
                                               {"type": "Done", "status": "False", "reason": "Later", "message": "n"}]}
    assert [(e.type, e.reason) for e in transition_events({}, calm, policy, "")] == [
        ("Normal", "PhaseRunning"), ("Warning", "Bad"), ("Normal", "Later")]
    assert transition_events(calm, calm, policy, "") == []
