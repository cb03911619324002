"""`helm uninstall` with objects present (issue 34 item 2): the chart's pre-delete Job stops the in-cluster
operator and takes its finalizer off the OrangeFSCluster, CostCalibration and LayoutPolicy it served, so
the namespace holding them is deleted within a minute afterwards — before, it hung in Terminating for
good, its objects' finalizer waiting for an operator that was gone (docs/helm.md, "Uninstall")."""

from __future__ import annotations

import time
from typing import Any

from pfslayout.operator import finalizer
from pfstestkit.cluster import Cluster
from pfstestkit.crd_release import served_namespace
from pfstestkit.lanes import current
from pfstestkit.real import place

KINDS = ("orangefsclusters.pfslayout.io", "costcalibrations.pfslayout.io", "layoutpolicies.pfslayout.io")
# what the issue asks of the namespace's deletion once the release is gone
DELETE_WITHIN_S = 60


def objects() -> list[dict[str, Any]]:
    group = "pfslayout.io/v1alpha1"
    return [
        {"apiVersion": group, "kind": "OrangeFSCluster", "metadata": {"name": "kept"},
         "spec": {"servers": {"count": 1, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                  "storage": {"type": "emptyDir", "size": "256Mi"}, "client": {"replicas": 0},
                  "calibration": {"auto": False}}},
        # a calibration and a policy of a cluster that never becomes Ready: served (finalizer on), idle
        {"apiVersion": group, "kind": "CostCalibration", "metadata": {"name": "kept"},
         "spec": {"clusterRef": {"name": "absent"}}},
        {"apiVersion": group, "kind": "LayoutPolicy", "metadata": {"name": "kept"},
         "spec": {"clusterRef": {"name": "absent"}, "selector": {"matchLabels": {"app": "none"}},
                  "rules": [{"path": "/x", "mode": "explicit", "explicit": {"layout": "1-DH"}}]}},
    ]


def test_uninstall_with_objects_present_leaves_their_namespace_deletable(
        cluster: Cluster, incluster_operator: dict[str, Any]) -> None:
    lane = current()
    mine = finalizer.name(lane.watch)
    with served_namespace(cluster, f"{lane.prefix}uninstall") as ns:
        for obj in objects():
            cluster.apply(place(obj, cluster.mode), namespace=ns)

        def carried() -> dict[str, list[str]] | None:
            got = {k: cluster.kubectl_json("get", k, "kept", "-n", ns)["metadata"].get("finalizers") or []
                   for k in KINDS}
            return got if all(mine in f for f in got.values()) else None
        cluster.wait_until(carried, f"the operator's finalizer {mine} on all three objects", timeout=120, interval=1)

        out = cluster.helm("uninstall", lane.release, "-n", lane.release_ns, "--wait", "--timeout", "180s",
                           check=False, timeout=240)
        assert out.returncode == 0, out.stdout + out.stderr
        assert cluster.kubectl_json("get", "deployments", "-n", lane.release_ns)["items"] == []
        left = {k: cluster.kubectl_json("get", k, "kept", "-n", ns)["metadata"].get("finalizers") or [] for k in KINDS}
        assert all(mine not in f for f in left.values()), left
        # the replicas' peering object (cluster-scoped) went with the release
        peerings = cluster.kubectl("get", "clusterkopfpeerings.kopf.dev", "-o", "name").stdout.split()
        assert not [p for p in peerings if p.rsplit("/", 1)[-1].startswith(lane.release)], peerings
        # the hook's own objects went with its success
        hooks = cluster.kubectl_json("get", "jobs,serviceaccounts", "-n", lane.release_ns, "-l",
                                     "app.kubernetes.io/component=uninstall")["items"]
        assert hooks == [], hooks

        start = time.monotonic()
        cluster.kubectl("delete", "namespace", ns, "--wait=false")

        def gone() -> bool | None:
            return cluster.kubectl("get", "namespace", ns, check=False).returncode != 0 or None
        cluster.wait_until(gone, f"namespace {ns} deleted", timeout=DELETE_WITHIN_S, interval=1)
        print(f"namespace {ns} deleted {time.monotonic() - start:.1f} s after the uninstall")
