"""The generic Kubernetes parts take the kind as data: owner references and child metadata for any
custom resource, and transition Events under a kind's own policy."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hyp

from pfslayout.k8s.conditions import EventPolicy, transition_events
from pfslayout.k8s.custom import merge_patch
from pfslayout.k8s.meta import Owner, object_metadata, owner_of
from pfslayout.kinds import COST_CALIBRATION, LAYOUT_POLICY, ORANGEFS_CLUSTER


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


def _apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386's reference algorithm (section 2), as the API server applies a merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _apply_merge_patch(out.get(key), value)
    return out


_scalars = hyp.one_of(hyp.booleans(), hyp.integers(-3, 3), hyp.sampled_from(["a", "b"]))
_values = hyp.recursive(_scalars, lambda inner: hyp.lists(inner, max_size=3)
                        | hyp.dictionaries(hyp.sampled_from("pqrs"), inner, max_size=4), max_leaves=12)
_objects = hyp.dictionaries(hyp.sampled_from("abcde"), _values, max_size=5)


@settings(max_examples=300, deadline=None)
@given(_objects, _objects)
def test_merge_patch_makes_each_written_field_exactly_the_new_value(old: dict[str, Any], new: dict[str, Any]) -> None:
    patch = merge_patch(old, new)
    # applied to the object, the fields written become the new values — nested keys the new value no
    # longer has are removed — and the fields not written keep theirs
    assert _apply_merge_patch(old, patch) == {**old, **new}
    assert (patch == {}) == all(k in old and old[k] == v for k, v in new.items())


def test_merge_patch_nulls_a_dropped_nested_key_and_leaves_unwritten_fields() -> None:
    old = {"params": {"e": 1, "e_write": 2}, "fit": {"rank": 6}, "calibrationRef": {"name": "x"}}
    new = {"params": {"e": 1}, "fit": {"rank": 5}}
    assert merge_patch(old, new) == {"params": {"e_write": None}, "fit": {"rank": 5}}
