"""What the fault tests share: the file system and policy they drive, their observed state, the
operator's identity, and the narrow rule an edit changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pfstestkit.cluster import Cluster
from pfstestkit.crd_release import install_release
from pfstestkit.kinds import LP, OFS
from pfstestkit.local_operator import environment
from pfstestkit.policies import RECHECK_S, cond, lp_status


def narrow_strip(cluster: Any, ns: str) -> int | None:
    rules = (cluster.kubectl_json("get", LP, "kills", "-n", ns).get("status") or {}).get("rules") or []
    rule = next((r for r in rules if r.get("path") == "/narrow" and r.get("applied")), None)
    return int(rule["layout"]["stripSize"]) if rule and rule.get("layout") else None


def edit_narrow(cluster: Any, ns: str, strip: int) -> None:
    edited = policy()
    edited["spec"]["rules"][1]["explicit"]["stripSize"] = strip
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(edited))


def ofs(servers: int) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "kills"},
            "spec": {"servers": {"count": servers, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                     "storage": {"type": "emptyDir", "size": "1Gi"}, "client": {"replicas": 1},
                     "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}


def policy() -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "kills"},
            "spec": {"clusterRef": {"name": "kills"}, "selector": {"matchLabels": {"pfslayout.io/policy": "kills"}},
                     "rules": [{"path": "/wide", "mode": "explicit", "explicit": {"layout": "2-D", "groups": 2}},
                               {"path": "/narrow", "mode": "explicit",
                                "explicit": {"layout": "1-DH", "stripSize": 65536}}]}}


def ofs_state(cluster: Any, ns: str, servers: int) -> dict[str, Any] | None:
    obj = cluster.kubectl_json("get", OFS, "kills", "-n", ns)
    st = obj.get("status") or {}
    ready = cond(st, "Ready")
    if ready.get("status") != "True" or st.get("readyServers") != servers or st.get("servers") != servers:
        return None
    return {"phase": st.get("phase"), "servers": st.get("servers"), "readyServers": st.get("readyServers"),
            "conditions": sorted((c["type"], c["status"], c.get("reason")) for c in st.get("conditions") or [])}


def lp_state(cluster: Any, ns: str) -> dict[str, Any] | None:
    st = lp_status(cluster, ns, "kills")
    if cond(st, "Ready").get("status") != "True" or st.get("appliedRules") != "2/2":
        return None
    return {"appliedRules": st["appliedRules"], "injectedJobs": st.get("injectedJobs", 0),
            "driftRepairs": st.get("driftRepairs", 0),
            "lastDriftRepair": (st.get("lastDriftRepair") or {}).get("hints"),
            "conditions": sorted((c["type"], c["status"], c.get("reason")) for c in st.get("conditions") or []),
            "rules": [{k: r.get(k) for k in ("path", "decision", "layout", "hints", "applied", "datafiles")}
                      for r in st.get("rules") or []]}


@pytest.fixture(scope="module")
def identity(cluster: Cluster) -> Iterator[Path]:
    """The chart installed; a kubeconfig with its ServiceAccount's token; a short drift-check period."""
    kubeconfig = install_release(cluster, host_operator=True)
    with environment(PFSLAYOUT_LAYOUT_RECHECK_SECONDS=str(RECHECK_S)):
        yield kubeconfig
