"""Whether a finished calibration still describes its cluster (kinds/costcalibration/platform.py); the
reconciler's use of it is in test_reconcile_costcalibration.py."""

from __future__ import annotations

import pytest

from pfslayout.kinds.costcalibration import platform


@pytest.mark.parametrize(("measured", "servers", "automatic", "want"), [
    (4, 4, True, platform.CURRENT), (4, 4, False, platform.CURRENT),
    (4, 6, True, platform.RERUN), (4, 6, False, platform.STALE),
    (None, 6, True, platform.CURRENT),  # a run recorded before the count was kept
])
def test_decide(measured: int | None, servers: int, automatic: bool, want: str) -> None:
    assert platform.decide(measured, servers, automatic) == want


def test_only_the_clusters_own_calibration_is_automatic() -> None:
    owned = {"metadata": {"ownerReferences": [{"kind": "OrangeFSCluster", "name": "fs", "controller": True}]}}
    assert platform.automatic(owned, "fs")
    assert not platform.automatic(owned, "other")
    assert not platform.automatic({"metadata": {}}, "fs")
    helper = {"metadata": {"ownerReferences": [{"kind": "OrangeFSCluster", "name": "fs"}]}}  # not controller
    assert not platform.automatic(helper, "fs")


def test_the_condition_says_what_changed_and_clears_with_its_transition_time() -> None:
    on = platform.stale(True, 4, 6, "fs", 2, 3, "2026-11-30T00:00:00Z", None)
    assert (on["type"], on["status"], on["reason"]) == ("Stale", "True", "ServersChanged")
    assert "run 2 measured 4 servers; OrangeFSCluster fs now has 6" in on["message"]
    off = platform.stale(False, 4, 4, "fs", 2, 3, "2026-11-30T01:00:00Z", [on])
    assert (off["status"], off["reason"], off["lastTransitionTime"]) == ("False", "ServersUnchanged",
                                                                        "2026-11-30T01:00:00Z")
