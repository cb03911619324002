"""Who may probe now (kinds/costcalibration/probe_slot.py): the holder keeps the slot, others wait for it,
and waiting calibrations go in the order their runs started."""

from __future__ import annotations

import pytest

from pfslayout.kinds.costcalibration.probe_slot import Claim, claim_of, waiting_for

A = Claim("2026-11-29T12:00:00Z", "team-a", "a")
B = Claim("2026-11-29T12:00:05Z", "team-a", "b")
C = Claim("2026-11-29T12:00:05Z", "team-b", "a")  # same second as B: the namespace breaks the tie


def test_a_holder_keeps_the_slot_between_its_jobs() -> None:
    assert waiting_for(B, [A], probing={B.ref}) is None


def test_anyone_else_probing_makes_a_calibration_wait_for_it() -> None:
    assert waiting_for(A, [B], probing={B.ref}) == B.ref  # even an earlier run waits for a job under way


def test_with_the_slot_free_the_earliest_run_goes_first() -> None:
    assert waiting_for(A, [B, C], probing=set()) is None
    assert waiting_for(B, [A, C], probing=set()) == A.ref
    assert waiting_for(C, [A, B], probing=set()) == A.ref
    assert waiting_for(C, [B], probing=set()) == B.ref


@pytest.mark.parametrize(("status", "expected"), [
    ({"phase": "Running", "startTime": "2026-11-29T12:00:00Z"}, A),
    ({"phase": "Pending", "startTime": "2026-11-29T12:00:00Z"}, None),  # waiting for its cluster: no claim
    ({"phase": "Succeeded", "startTime": "2026-11-29T12:00:00Z"}, None),
    ({"phase": "Running"}, None),
    ({}, None),
])
def test_only_a_run_under_way_claims_a_place(status: dict[str, str], expected: Claim | None) -> None:
    assert claim_of({"metadata": {"namespace": "team-a", "name": "a"}, "status": status}) == expected
