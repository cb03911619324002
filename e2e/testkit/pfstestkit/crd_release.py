"""The chart releases the end-to-end tier installs and the namespaces it creates, for the lane of the module
running (pfstestkit.lanes): the shared release owns the CRDs (installed once per cluster, kept through
uninstalls), each other lane's release only its RBAC. Namespaces carry the lane's prefix and are enrolled
with the lane's operator like a user's would be (docs/rbac.md).
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pfstestkit import REPO, real
from pfstestkit.lanes import RELEASE, RELEASE_NS, Lane, current

CHART = REPO / "charts" / "pfs-layout-operator"
PUSH_CHART = REPO / "charts" / "push.sh"
# CRD name -> short name
CRDS = {"orangefsclusters.pfslayout.io": "ofs", "costcalibrations.pfslayout.io": "cc",
        "layoutpolicies.pfslayout.io": "lp"}
HELM_WAIT = ["--wait", "--timeout", "180s"]

__all__ = ["CHART", "CRDS", "RELEASE", "RELEASE_NS", "chart_source", "crd_namespace", "dev_version",
           "empty_namespace", "enroll", "ensure_crds", "install_crds", "install_release", "push_chart",
           "served_namespace"]


def dev_version(chart: Path = CHART) -> str:
    """The version this checkout's chart is pushed at: the chart's own with a prerelease naming its
    content (`0.1.0-dev.g<hash>`), so an edited chart is a new version and an unchanged one the same."""
    version = re.search(r"^version:\s*\"?([^\s\"]+)", (chart / "Chart.yaml").read_text(), re.M)
    assert version, f"no version in {chart / 'Chart.yaml'}"
    digest = hashlib.sha256()
    for path in sorted(p for p in chart.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(chart)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{version.group(1)}-dev.g{digest.hexdigest()[:10]}"


def push_chart(cluster: Any, chart: Path, version: str) -> list[str]:
    """`chart` pushed to the test cluster's registry at `version` (charts/push.sh), once per cluster (a
    marker in its state directory); the helm arguments that install it from there, as users do."""
    registry = cluster.env["PFSLAYOUT_REGISTRY"]
    charts = Path(cluster.state_dir) / "charts"
    charts.mkdir(exist_ok=True)
    marker = charts / f"{version}.pushed"
    with open(charts / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            pushed = cluster.run(str(PUSH_CHART), registry, version, str(chart), timeout=180).stdout.split()
            assert pushed[:2] == [f"oci://{registry}/charts/pfs-layout-operator", version], pushed
            marker.write_text(" ".join(pushed) + "\n")
    return [f"oci://{registry}/charts/pfs-layout-operator", "--version", version, "--plain-http"]


def chart_source(cluster: Any) -> list[str]:
    """Where helm takes this checkout's chart from: with the test cluster's registry (a real node), the
    registry — pushed there at dev_version() and installed by reference, the way users install it — and
    the chart directory otherwise (kind, a kwok-only cluster)."""
    if not cluster.env.get("PFSLAYOUT_REGISTRY"):
        return [str(CHART)]
    return push_chart(cluster, CHART, dev_version())


def enroll(cluster: Any, namespace: str) -> None:
    """What a namespace admin does so the operator may act in a namespace matched by a glob: one
    RoleBinding to the chart's per-namespace ClusterRole (it may exist before the chart is installed)."""
    lane = current()
    cluster.kubectl("create", "rolebinding", lane.release, "-n", namespace, f"--clusterrole={lane.namespace_role}",
                    f"--serviceaccount={lane.service_account}")


def install_crds(cluster: Any) -> None:  # the `cluster` fixture of e2e/tests/conftest.py
    """The chart's CRDs, installed by the shared release, established before any manifest is sent (a
    module of a shared lane: no other lane's helm command touches that release)."""
    assert current().shared, f"lane {current().name} must not install the shared release"
    # This checkout's chart, keeping whatever values another module installed the release with (and taking
    # this chart's defaults for values an older release did not have: the upgrade test).
    cluster.helm("upgrade", "--install", "--reset-then-reuse-values", RELEASE, *chart_source(cluster), "-n",
                 RELEASE_NS,
                 "--create-namespace", *current().chart_values, *HELM_WAIT, timeout=240)
    for name in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", timeout=90)


def ensure_crds(cluster: Any, lock_dir: Path) -> None:
    """The CRDs on the API server before a session's first test: the shared release installed once when
    they are missing, one session at a time (sessions sharing a cluster wait on a lock in its state
    directory), so no lane's test ever meets a cluster without them. The chart keeps them through an
    uninstall (`crds.keep`)."""
    with open(lock_dir / ".crds.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            present = cluster.kubectl("get", "crd", *CRDS, check=False).returncode == 0
            if not present:
                cluster.helm("upgrade", "--install", RELEASE, *chart_source(cluster), "-n", RELEASE_NS,
                             "--create-namespace", *Lane("r").chart_values, *HELM_WAIT, timeout=240)
            for name in CRDS:
                cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", timeout=90)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install_release(cluster: Any, *values: str, host_operator: bool = False) -> Path:
    """The current lane's chart release installed (or upgraded to this checkout's chart): a kubeconfig with
    its ServiceAccount's bound token, so an operator run with it has exactly the chart's RBAC.
    `host_operator`: the test runs the operator as a host process (local_operator), so the chart's
    Deployment goes to a kwok node, where nothing runs — on the local cluster it lands there anyway, on
    kind it would otherwise run for real beside the host's."""
    lane = current()
    played = real.kwok_chart_values() if host_operator else []
    cluster.helm("upgrade", "--install", lane.release, *chart_source(cluster), "-n", lane.release_ns,
                 "--create-namespace", *lane.chart_values, *HELM_WAIT, *played, *values, timeout=240)
    return Path(cluster.service_account_kubeconfig(lane.release_ns, lane.release))


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
def crd_namespace(cluster: Any, what: str, *, served: bool = True) -> Iterator[str]:
    """A fresh namespace ``e2e-<lane>-<what>-<random>``; on exit its CRs are deleted before the namespace.
    `served=False`: ``apionly-<lane>-<what>-<random>``, outside every operator's watch, for tests of the API
    server alone (schema, CEL, status subresource) — on kind the shared release's operator runs in-cluster
    and would otherwise reconcile their objects and rewrite the status they wrote."""
    lane = current()
    name = f"{lane.prefix if served else f'apionly-{lane.name}-'}{what}-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    if served:
        enroll(cluster, name)
    try:
        yield name
    finally:
        # Remove the test objects first, so an operator started by a later module never sees them. Their
        # finalizers go one object at a time (the generated-specs module leaves ~40): polled until none is
        # left, not a fixed wait — kubectl's own 60 s ran out on a loaded machine (the 90-s subprocess limit
        # then failed a teardown whose deletions were still progressing).
        kinds = "orangefsclusters,costcalibrations,layoutpolicies"
        cluster.kubectl("delete", "-n", name, kinds, "--all", "--wait=false", check=False)
        cluster.wait_until(lambda: not cluster.kubectl_json("get", "-n", name, kinds)["items"] or None,
                           f"the custom objects of namespace {name} deleted", timeout=300, interval=2)
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@contextmanager
def served_namespace(cluster: Any, name: str) -> Iterator[str]:
    """Namespace `name`, created, enrolled with the operator and able to admit pods; deleted on exit."""
    cluster.kubectl("create", "namespace", name)
    enroll(cluster, name)  # the lane's operator serves e2e-<lane>-* where it is enrolled
    # ServiceAccount admission needs the namespace's `default` account before any pod is accepted.
    cluster.wait_until(lambda: cluster.kubectl("-n", name, "get", "serviceaccount", "default",
                                               check=False).returncode == 0,
                       f"ServiceAccount {name}/default", timeout=30)
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
