"""The chart release whose CRDs the API-server test modules share, and a namespace to create CRs in.

Every module installs the same release the demo does, so the CRDs have one owner whichever module runs first.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pfstestkit import REPO

CHART = REPO / "charts" / "pfs-layout-operator"
RELEASE, RELEASE_NS = "pfs-layout-operator", "pfs-layout-system"
# CRD name -> short name
CRDS = {"orangefsclusters.pfslayout.io": "ofs", "costcalibrations.pfslayout.io": "cc",
        "layoutpolicies.pfslayout.io": "lp"}
# The namespaces every e2e install serves (operator.watchNamespaces): the tests' own, `e2e-...`, and the
# benches', `pfsbench-...`. Each is enrolled like a user's would be (enroll() below, docs/rbac.md).
WATCH = ("e2e-*", "pfsbench-*")
WATCH_VALUES = ["--set-json", "operator.watchNamespaces=[" + ",".join(f'"{w}"' for w in WATCH) + "]"]
# The ClusterRole of the operator's rights inside a namespace it serves, and its ServiceAccount.
NAMESPACE_ROLE = f"{RELEASE}-namespace"
SERVICE_ACCOUNT = f"{RELEASE_NS}:{RELEASE}"


def enroll(cluster: Any, namespace: str) -> None:
    """What a namespace admin does so the operator may act in a namespace matched by a glob: one
    RoleBinding to the chart's per-namespace ClusterRole (it may exist before the chart is installed)."""
    cluster.kubectl("create", "rolebinding", RELEASE, "-n", namespace, f"--clusterrole={NAMESPACE_ROLE}",
                    f"--serviceaccount={SERVICE_ACCOUNT}")


def install_crds(cluster: Any) -> None:  # the `cluster` fixture of e2e/tests/conftest.py
    """The chart's CRDs, installed by the shared release, established before any manifest is sent."""
    # This checkout's chart, keeping whatever values another module installed the release with.
    cluster.helm("upgrade", "--install", "--reuse-values", RELEASE, str(CHART), "-n", RELEASE_NS,
                 "--create-namespace", *WATCH_VALUES, "--wait", "--timeout", "180s", timeout=240)
    for name in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", timeout=90)


def empty_namespace(cluster: Any, ns: str) -> None:
    """Deletes every object of the project's kinds (and the MPIJobs) in `ns` while an operator runs: their
    finalizers need it, and a namespace deleted with them loses the RoleBinding that lets the operator
    remove them. OrangeFSClusters with `reclaimPolicy: Retain` are switched to Delete first, so nothing
    is left on the node."""
    for item in cluster.kubectl_json("get", "orangefsclusters.pfslayout.io", "-n", ns)["items"]:
        if (item.get("spec") or {}).get("reclaimPolicy") != "Delete":
            cluster.kubectl("patch", "orangefsclusters.pfslayout.io", item["metadata"]["name"], "-n", ns,
                            "--type=merge", "-p", '{"spec":{"reclaimPolicy":"Delete"}}', check=False)
    for kind in ("costcalibrations.pfslayout.io", "mpijobs.kubeflow.org", "layoutpolicies.pfslayout.io",
                 "orangefsclusters.pfslayout.io"):
        cluster.kubectl("delete", kind, "--all", "-n", ns, "--wait=true", "--timeout=180s", check=False, timeout=240)


@contextmanager
def crd_namespace(cluster: Any, prefix: str) -> Iterator[str]:
    """A fresh namespace ``<prefix>-<random>``; on exit its CRs are deleted before the namespace."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    enroll(cluster, name)
    try:
        yield name
    finally:
        # Remove the test objects first, so an operator started by a later module never sees them.
        cluster.kubectl("delete", "-n", name, "orangefsclusters,costcalibrations,layoutpolicies", "--all",
                        "--timeout=60s", check=False, timeout=90)
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@contextmanager
def served_namespace(cluster: Any, name: str) -> Iterator[str]:
    """Namespace `name`, created, enrolled with the operator and able to admit pods; deleted on exit."""
    cluster.kubectl("create", "namespace", name)
    enroll(cluster, name)  # the operator serves e2e-* (crd_release.WATCH) where it is enrolled
    # ServiceAccount admission needs the namespace's `default` account before any pod is accepted.
    cluster.wait_until(lambda: cluster.kubectl("-n", name, "get", "serviceaccount", "default",
                                               check=False).returncode == 0,
                       f"ServiceAccount {name}/default", timeout=30)
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
