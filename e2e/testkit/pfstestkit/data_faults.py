"""The building blocks of the data-path fault tests (e2e/tests/test_real_data_faults.py and
test_real_server_outages.py): two-server OrangeFSClusters on hostPath, writing and checksumming files
through the toolbox's client, and the fixtures of a served namespace and a fresh host directory."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pfstestkit.crd_release import empty_namespace
from pfstestkit.kinds import MOUNT, OFS
from pfstestkit.ofs_pods import deployment_pods, sh


def cluster_doc(name: str, host: Path, reclaim: str) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
            "spec": {"servers": {"count": 2, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                     "storage": {"type": "hostPath", "hostPath": {"path": str(host)}}, "client": {"replicas": 1},
                     "calibration": {"auto": False}, "reclaimPolicy": reclaim}}


def put(cluster: Any, ns: str, tool: str, path: str, data: bytes) -> str:
    """Writes `data` to `path` on OrangeFS through the toolbox's client; the output of pvfs2-cp."""
    return sh(cluster, ns, tool, f"set -e; f=$(mktemp); base64 -d > $f; pvfs2-cp $f {MOUNT}/{path}; rm -f $f",
              stdin=base64.b64encode(data).decode(), timeout=300)


def sha256_of(cluster: Any, ns: str, tool: str, path: str) -> str:
    out = sh(cluster, ns, tool, f"set -e; f=$(mktemp); pvfs2-cp {MOUNT}/{path} $f; sha256sum < $f; rm -f $f",
             timeout=300)
    return out.split()[0]


@pytest.fixture
def served(cluster: Any, operator: Any, namespace: str) -> Iterator[str]:
    """The test's namespace, served by the operator, emptied while the operator still runs."""
    try:
        yield namespace
    finally:
        empty_namespace(cluster, namespace)


@pytest.fixture
def host_root(cluster: Any, served: str) -> Iterator[Path]:
    """A fresh directory for the servers' hostPath storage, removed once the test's clusters are gone (the
    operator's wipe Jobs need it until then). On the local cluster it is made here, on this machine, the
    real node's host; on kind each node makes its own (the volumes are DirectoryOrCreate) and goes with
    the node."""
    root = Path("/var/tmp") / f"pfslayout-{served}"
    local = cluster.mode == "local"
    if local:
        root.mkdir(parents=True)
    try:
        yield root
    finally:
        empty_namespace(cluster, served)
        if local:
            shutil.rmtree(root, ignore_errors=True)


def delete_cluster(cluster: Any, ns: str, name: str) -> None:
    cluster.kubectl("delete", OFS, name, "-n", ns, "--wait=true", "--timeout=180s", timeout=200)
    cluster.wait_until(lambda: not deployment_pods(cluster, ns, f"app.kubernetes.io/instance={name}"),
                       f"the pods of {ns}/{name} to be gone", timeout=180, interval=1)
