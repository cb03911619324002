"""The chart installed into the real API server: objects, `helm test`, and the ServiceAccount's
least-privilege RBAC checked with `kubectl auth can-i` (what it must be able to do, and what not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "pfs-layout-operator"
# The release the demo installs; every module uses it so the CRDs have one owner.
RELEASE, RELEASE_NS = "pfs-layout-operator", "pfs-layout-system"
SA = f"system:serviceaccount:{RELEASE_NS}:{RELEASE}"


@pytest.fixture(scope="module")
def release(cluster) -> str:  # noqa: ANN001 - the `cluster` fixture of e2e/tests/conftest.py
    # This checkout's chart, keeping whatever values another module installed the release with.
    cluster.helm("upgrade", "--install", "--reuse-values", RELEASE, str(CHART), "-n", RELEASE_NS,
                 "--create-namespace", "--wait", "--timeout", "180s", timeout=240)
    return RELEASE


def can_i(cluster, verb: str, resource: str, *extra: str) -> bool:  # noqa: ANN001
    proc = cluster.kubectl("auth", "can-i", verb, resource, f"--as={SA}", *extra, check=False)
    answer = proc.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl auth can-i {verb} {resource}: {proc.stdout}{proc.stderr}"
    return answer == "yes"


def test_release_objects(cluster, release: str) -> None:  # noqa: ANN001
    deploy = cluster.kubectl_json("get", "deployment", RELEASE, "-n", RELEASE_NS)
    assert deploy["spec"]["strategy"]["type"] == "Recreate" and deploy["spec"]["replicas"] == 1
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == RELEASE
    cluster.kubectl("get", "serviceaccount", RELEASE, "-n", RELEASE_NS)
    svc = cluster.kubectl_json("get", "service", RELEASE, "-n", RELEASE_NS)
    assert {p["name"] for p in svc["spec"]["ports"]} == {"metrics", "health"}
    role = cluster.kubectl_json("get", "clusterrole", RELEASE)
    assert all("*" not in r.get("verbs", []) + r.get("resources", []) for r in role["rules"])
    for name in ("orangefsclusters", "costcalibrations", "layoutpolicies"):
        crd = cluster.kubectl_json("get", "crd", f"{name}.pfslayout.io")
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
    # The webhook is on by default; its namespace scope and CA bundle are the operator's to keep.
    (hook,) = cluster.kubectl_json("get", "mutatingwebhookconfiguration", RELEASE)["webhooks"]
    assert hook["clientConfig"]["service"] == {"name": f"{RELEASE}-webhook", "namespace": RELEASE_NS,
                                               "path": "/inject", "port": 443}
    assert hook["failurePolicy"] == "Fail" and hook["rules"][0]["resources"] == ["mpijobs"]


def test_helm_test_hook_succeeds(cluster, release: str) -> None:  # noqa: ANN001
    out = cluster.helm("test", RELEASE, "-n", RELEASE_NS, "--timeout", "120s", timeout=180).stdout
    assert re.search(rf"TEST SUITE:\s+{RELEASE}-test-health", out), out
    assert re.search(r"Phase:\s+Succeeded", out), out


CAN = [
    # Its own resources, in every namespace, and their status and finalizers.
    ("get", "orangefsclusters.pfslayout.io", "-A"),
    ("watch", "layoutpolicies.pfslayout.io", "-A"),
    ("patch", "costcalibrations.pfslayout.io", "-n", "default"),
    ("patch", "orangefsclusters.pfslayout.io", "--subresource=status", "-n", "default"),
    ("update", "layoutpolicies.pfslayout.io", "--subresource=finalizers", "-n", "default"),
    ("create", "costcalibrations.pfslayout.io", "-n", "default"),
    # What it provisions.
    ("create", "statefulsets.apps", "-n", "default"),
    ("delete", "deployments.apps", "-n", "default"),
    ("create", "configmaps", "-n", "default"),
    ("patch", "services", "-n", "default"),
    ("delete", "persistentvolumeclaims", "-n", "default"),
    ("create", "jobs.batch", "-n", "default"),
    ("list", "pods", "-A"),
    ("create", "events", "-n", "default"),
    ("patch", "mpijobs.kubeflow.org", "-n", "default"),
    # Calibration: probe MPIJobs, and their results read from the launcher's log.
    ("create", "mpijobs.kubeflow.org", "-n", "default"),
    ("delete", "mpijobs.kubeflow.org", "-n", "default"),
    ("get", "pods/log", "-n", "default"),
    # The admission webhook: its certificate Secret and the chart's configuration, by name.
    ("create", "secrets", "-n", RELEASE_NS),
    ("update", f"secrets/{RELEASE}-webhook-tls", "-n", RELEASE_NS),
    ("patch", f"mutatingwebhookconfigurations.admissionregistration.k8s.io/{RELEASE}"),
    # What Kopf needs to run --all-namespaces.
    ("list", "customresourcedefinitions.apiextensions.k8s.io"),
    ("watch", "namespaces"),
]

CANNOT = [
    ("get", "secrets", "-A"),
    ("list", "secrets", "-n", RELEASE_NS),
    # the webhook's own Secret and configuration only
    ("get", f"secrets/{RELEASE}-other", "-n", RELEASE_NS),
    ("create", "secrets", "-n", "default"),
    ("patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io/other"),
    ("delete", f"mutatingwebhookconfigurations.admissionregistration.k8s.io/{RELEASE}"),
    ("delete", "nodes"),
    ("get", "nodes"),
    ("create", "pods", "-n", "default"),
    ("create", "pods/exec", "-n", "default"),
    ("delete", "namespaces"),
    ("create", "clusterroles.rbac.authorization.k8s.io"),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
    ("create", "rolebindings.rbac.authorization.k8s.io", "-n", "default"),
    ("escalate", "clusterroles.rbac.authorization.k8s.io"),
    ("bind", "clusterroles.rbac.authorization.k8s.io"),
    ("impersonate", "serviceaccounts", "-n", "default"),
    ("create", "serviceaccounts/token", "-n", RELEASE_NS),
    ("create", "orangefsclusters.pfslayout.io", "-n", "default"),
    ("delete", "orangefsclusters.pfslayout.io", "-n", "default"),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("create", "pods/attach", "-n", "default"),
    ("create", "pods/portforward", "-n", "default"),
    ("create", "mutatingwebhookconfigurations.admissionregistration.k8s.io"),
    ("*", "*", "-A"),
]


@pytest.mark.parametrize("check", CAN, ids=lambda c: " ".join(c))
def test_service_account_can(cluster, release: str, check: tuple[str, ...]) -> None:  # noqa: ANN001
    assert can_i(cluster, *check), f"the operator needs: {' '.join(check)}"


@pytest.mark.parametrize("check", CANNOT, ids=lambda c: " ".join(c))
def test_service_account_cannot(cluster, release: str, check: tuple[str, ...]) -> None:  # noqa: ANN001
    assert not can_i(cluster, *check), f"least privilege violated: {' '.join(check)} is allowed"


def test_token_of_the_service_account_is_limited(cluster, release: str) -> None:  # noqa: ANN001
    """With a real bound token (how the operator runs locally), reads work and secrets stay closed."""
    kubeconfig = cluster.service_account_kubeconfig(RELEASE_NS, RELEASE)
    cluster.kubectl("get", "orangefsclusters.pfslayout.io", "-A", kubeconfig=kubeconfig)
    cluster.kubectl("get", "namespaces", kubeconfig=kubeconfig)
    denied = cluster.kubectl("get", "secrets", "-n", RELEASE_NS, kubeconfig=kubeconfig, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()


def test_second_release_without_crds_installs_beside_the_first(cluster, release: str) -> None:  # noqa: ANN001
    """`crds.install=false` lets another release (another namespace) use the CRDs the first one owns;
    with CRDs on, Helm would refuse to take them over."""
    other, ns = "pfs-second", "pfs-second-system"
    refused = cluster.helm("install", "pfs-third", str(CHART), "-n", ns, "--create-namespace", check=False)
    assert refused.returncode != 0 and "cannot be imported" in refused.stderr, refused.stderr
    try:
        cluster.helm("install", other, str(CHART), "-n", ns, "--create-namespace", "--set", "crds.install=false",
                     "--wait", "--timeout", "120s", timeout=180)
        assert cluster.kubectl_json("get", "clusterrole", f"{other}-pfs-layout-operator")["rules"]
        crd = cluster.kubectl_json("get", "crd", "orangefsclusters.pfslayout.io")
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
    finally:
        cluster.helm("uninstall", other, "-n", ns, "--wait", "--timeout", "60s", check=False, timeout=120)
        cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
    # The first release's CRDs are untouched by the second's uninstall.
    cluster.kubectl("get", "crd", "orangefsclusters.pfslayout.io")


def test_webhook_objects_are_accepted_by_the_api_server(cluster, release: str) -> None:  # noqa: ANN001
    """The MPIJob webhook wiring (off by default) renders objects the API server accepts."""
    rendered = cluster.helm("template", RELEASE, str(CHART), "-n", RELEASE_NS, "--set", "crds.install=false",
                            "--set", "webhook.enabled=true", "--set", "webhook.tls.secretName=pfs-webhook-tls",
                            "--set", "webhook.tls.caBundle=TFMwdExTMUNSVWRKVGc9PQ==").stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    wanted = [d for d in docs if d["kind"] in ("MutatingWebhookConfiguration", "Service", "Deployment")]
    assert {d["kind"] for d in wanted} == {"MutatingWebhookConfiguration", "Service", "Deployment"}
    for d in wanted:
        d["metadata"]["name"] += "-dryrun"
        proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", "-o", "name", input=yaml.safe_dump(d),
                               check=False)
        assert proc.returncode == 0, f"{d['kind']}: {proc.stderr}"
