"""LayoutPolicies: the operator that serves them run locally with the chart's identity, their status,
conditions, Events and the hints read back from OrangeFS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pfstestkit.cluster import Cluster
from pfstestkit.crd_release import install_release
from pfstestkit.kinds import LP
from pfstestkit.local_operator import Operator, environment, local_operator
from pfstestkit.ofs_pods import sh

# The drift check's period of the operators these tests run (seconds).
RECHECK_S = 20


@pytest.fixture(scope="module")
def lp_operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    """The operator as a local process with the chart's identity and a short drift-check period."""
    kubeconfig = install_release(cluster, host_operator=True)
    with environment(PFSLAYOUT_LAYOUT_RECHECK_SECONDS=str(RECHECK_S)), \
            local_operator(cluster, kubeconfig, tmp_path_factory.mktemp("lp-operator")) as op:
        yield op


def lp_status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    return cluster.kubectl_json("get", LP, name, "-n", ns).get("status") or {}


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == type_), {})


def reasons(cluster: Cluster, ns: str, name: str) -> list[str]:
    items = cluster.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                 f"involvedObject.kind=LayoutPolicy,involvedObject.name={name}")["items"]
    return [e["reason"] for e in items]


def read_hint(cluster: Cluster, ns: str, pod: str, path: str, key: str) -> str:
    out = sh(cluster, ns, pod, f"pvfs2-xattr -t -k {key} {path}")
    return out.split('Value : "', 1)[1].rsplit('"', 1)[0] if 'Value : "' in out else ""
