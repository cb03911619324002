"""Whether a finished calibration still describes its cluster (pure; issue 34 item 4).

A run records the server count it measured (`status.servers`). When the OrangeFSCluster now has another
count — it was scaled — the parameters describe a platform that no longer exists: the automatic calibration
(the one the cluster made, `spec.calibration.auto`, owned by it) runs again on its own; one a user made is
left alone, with a `Stale` condition saying what changed and how to re-run it (the annotation
`pfslayout.io/recalibrate`), since its grid and its timing are the user's to choose.
"""

from __future__ import annotations

from typing import Any

from pfslayout.k8s.conditions import condition
from pfslayout.kinds import ORANGEFS_CLUSTER
from pfslayout.kinds.costcalibration.objects import RECALIBRATE_ANNOTATION

RERUN, STALE, CURRENT = "rerun", "stale", "current"
STALE_CONDITION = "Stale"


def decide(measured: int | None, servers: int, automatic: bool) -> str:
    """RERUN, STALE or CURRENT for a finished run that measured `measured` servers (None: a run recorded
    before the count was kept, judged current) on a cluster that now has `servers`."""
    if measured is None or measured == servers:
        return CURRENT
    return RERUN if automatic else STALE


def automatic(body: dict[str, Any], cluster: str) -> bool:
    """Whether this CostCalibration is the automatic one of OrangeFSCluster `cluster` (its controller)."""
    return any(ref.get("kind") == ORANGEFS_CLUSTER.kind and ref.get("name") == cluster and ref.get("controller")
               for ref in (body.get("metadata") or {}).get("ownerReferences") or [])


def stale(ok_stale: bool, measured: int | None, servers: int, cluster: str, run: int, generation: int, now: str,
          previous: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The `Stale` condition: True naming the counts and the fix, or False once the counts agree again."""
    if ok_stale:
        message = (f"run {run} measured {measured} servers; OrangeFSCluster {cluster} now has {servers}: the "
                   f"parameters describe the old platform. Re-run it with `kubectl annotate costcalibration "
                   f"<name> {RECALIBRATE_ANNOTATION}=<any new value> --overwrite`")
        return condition(STALE_CONDITION, True, "ServersChanged", message, generation, now, previous)
    return condition(STALE_CONDITION, False, "ServersUnchanged",
                     f"run {run} measured the {servers} servers OrangeFSCluster {cluster} has", generation, now,
                     previous)
