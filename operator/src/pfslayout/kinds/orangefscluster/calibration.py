"""The automatic CostCalibration of an OrangeFSCluster (`spec.calibration.auto`), and which calibration
is current for it (pure).

Created once, when the cluster first becomes Ready, named `<cluster>-calibration` and owned by the
cluster (it goes with it). Its grid is the profile's (`spec.calibration.profile`, see
`pfslayout.calibration.PROFILES`); the platform (servers, client nodes, ranks) comes from the cluster
and the CostCalibration defaults. Deleting it does not bring it back: `status.calibrationRef` remembers
that it was made.
"""

from __future__ import annotations

from typing import Any

from pfslayout import naming
from pfslayout.calibration import PROFILES
from pfslayout.k8s.meta import Owner, object_metadata
from pfslayout.kinds import COST_CALIBRATION
from pfslayout.kinds.orangefscluster.meta import labels
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec

CALIBRATION = "calibration"


def auto_calibration(spec: OrangeFSClusterSpec, owner: Owner) -> dict[str, Any]:
    """The cluster's CostCalibration. It names no probe image: the operator's (Settings.mpi_image) applies,
    as for any calibration that names none."""
    cc_spec: dict[str, Any] = {"clusterRef": {"name": owner.name},
                               "grid": PROFILES[spec.calibration.profile].grid_spec()}
    return {"apiVersion": COST_CALIBRATION.api_version, "kind": COST_CALIBRATION.kind,
            "metadata": object_metadata(owner, naming.auto_calibration(owner.name), labels(owner, CALIBRATION)),
            "spec": cc_spec}


def _ready(cc: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (cc.get("status") or {}).get("conditions") or [])


def current_calibration(cluster: str, calibrations: list[dict[str, Any]], previous: dict[str, Any] | None
                        ) -> dict[str, Any] | None:
    """The `status.calibrationRef` of `cluster`: the most recently completed Ready calibration of it;
    else the one already referenced (e.g. the automatic one while it runs), while it exists."""
    mine = [c for c in calibrations if ((c.get("spec") or {}).get("clusterRef") or {}).get("name") == cluster]
    done = [c for c in mine if _ready(c) and (c.get("status") or {}).get("completionTime")]
    if done:
        best = max(done, key=lambda c: (str(c["status"]["completionTime"]), str(c["metadata"]["name"])))
        return {"name": best["metadata"]["name"], "configMapName": best["status"].get("configMapName"),
                "completionTime": best["status"]["completionTime"]}
    if previous and previous.get("name"):
        return {"name": previous["name"]}
    return None
