"""The chart installed into the real API server: objects, `helm test`, and the ServiceAccount's
least-privilege RBAC checked with `kubectl auth can-i` (what it must be able to do, and what not)."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Iterator

import pytest
import yaml

from pfstestkit import rbac_matrix
from pfstestkit.crd_release import CHART, RELEASE, RELEASE_NS, chart_source, crd_namespace, dev_version
from pfstestkit.lanes import current

# The chart ServiceAccount of the release every module shares (crd_release).
SA = f"system:serviceaccount:{RELEASE_NS}:{RELEASE}"


@pytest.fixture(scope="module")
def release(cluster) -> str:  # noqa: ANN001 - the `cluster` fixture of e2e/tests/conftest.py
    # This checkout's chart, keeping whatever values another module installed the release with.
    cluster.helm("upgrade", "--install", "--reuse-values", RELEASE, *chart_source(cluster), "-n", RELEASE_NS,
                 "--create-namespace", *current().watch_values, "--wait", "--timeout", "180s", timeout=240)
    return RELEASE


def can_i(cluster, verb: str, resource: str, *extra: str) -> bool:  # noqa: ANN001
    proc = cluster.kubectl("auth", "can-i", verb, resource, f"--as={SA}", *extra, check=False)
    answer = proc.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl auth can-i {verb} {resource}: {proc.stdout}{proc.stderr}"
    return answer == "yes"


def test_release_objects(cluster, release: str) -> None:  # noqa: ANN001
    deploy = cluster.kubectl_json("get", "deployment", RELEASE, "-n", RELEASE_NS)
    # rolled without a gap; the e2e lanes run one replica (lanes.py), test_real_ha.py two
    assert deploy["spec"]["strategy"] == {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    pdb = cluster.kubectl_json("get", "poddisruptionbudget", RELEASE, "-n", RELEASE_NS)
    assert pdb["spec"]["maxUnavailable"] == 1
    cluster.kubectl("get", "crd", "clusterkopfpeerings.kopf.dev")
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == RELEASE
    cluster.kubectl("get", "serviceaccount", RELEASE, "-n", RELEASE_NS)
    svc = cluster.kubectl_json("get", "service", RELEASE, "-n", RELEASE_NS)
    assert {p["name"] for p in svc["spec"]["ports"]} == {"metrics", "health"}
    for name in (RELEASE, f"{RELEASE}-namespace"):
        role = cluster.kubectl_json("get", "clusterrole", name)
        assert all("*" not in r.get("verbs", []) + r.get("resources", []) for r in role["rules"]), name
    # The e2e install serves globs only: no RoleBinding from the chart, and no cluster-wide binding of the
    # per-namespace rights.
    assert cluster.kubectl("get", "clusterrolebinding", f"{RELEASE}-namespace", check=False).returncode != 0
    for name in ("orangefsclusters", "costcalibrations", "layoutpolicies"):
        crd = cluster.kubectl_json("get", "crd", f"{name}.pfslayout.io")
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
    # The webhook is on by default; its namespace scope and CA bundle are the operator's to keep.
    (hook,) = cluster.kubectl_json("get", "mutatingwebhookconfiguration", RELEASE)["webhooks"]
    assert hook["clientConfig"]["service"] == {"name": f"{RELEASE}-webhook", "namespace": RELEASE_NS,
                                               "path": "/inject", "port": 443}
    assert hook["failurePolicy"] == "Fail" and hook["rules"][0]["resources"] == ["mpijobs"]


def test_the_release_is_the_chart_from_the_registry(cluster, release: str) -> None:  # noqa: ANN001
    """With the test cluster's registry the release is this checkout's chart pushed there (charts/push.sh)
    and installed by its oci:// reference and version, as users install it."""
    registry = cluster.env.get("PFSLAYOUT_REGISTRY")
    if not registry:
        pytest.skip("no image registry (kind, or no real node): the chart is installed from its folder")
    meta = json.loads(cluster.helm("get", "metadata", RELEASE, "-n", RELEASE_NS, "-o", "json").stdout)
    assert (meta["chart"], meta["version"]) == ("pfs-layout-operator", dev_version()), meta
    with urllib.request.urlopen(f"http://{registry}/v2/charts/pfs-layout-operator/tags/list", timeout=30) as resp:
        tags = json.load(resp)["tags"]
    assert dev_version() in tags, tags


def test_helm_test_hook_succeeds(cluster, release: str) -> None:  # noqa: ANN001
    out = cluster.helm("test", RELEASE, "-n", RELEASE_NS, "--timeout", "120s", timeout=180).stdout
    assert re.search(rf"TEST SUITE:\s+{RELEASE}-test-health", out), out
    assert re.search(r"Phase:\s+Succeeded", out), out


# "{served}": an enrolled namespace the install serves (e2e-*); "default" is not served by the e2e install.
CAN = [
    # Its own resources, in every namespace, and their status and finalizers.
    ("get", "orangefsclusters.pfslayout.io", "-A"),
    ("watch", "layoutpolicies.pfslayout.io", "-A"),
    ("patch", "costcalibrations.pfslayout.io", "-n", "default"),
    ("patch", "orangefsclusters.pfslayout.io", "--subresource=status", "-n", "default"),
    ("update", "layoutpolicies.pfslayout.io", "--subresource=finalizers", "-n", "{served}"),
    ("create", "costcalibrations.pfslayout.io", "-n", "{served}"),
    # What it provisions, in a namespace it serves.
    ("create", "statefulsets.apps", "-n", "{served}"),
    ("delete", "deployments.apps", "-n", "{served}"),
    ("create", "configmaps", "-n", "{served}"),
    ("patch", "services", "-n", "{served}"),
    ("delete", "persistentvolumeclaims", "-n", "{served}"),
    ("create", "jobs.batch", "-n", "{served}"),
    ("list", "pods", "-n", "{served}"),
    ("create", "events", "-n", "{served}"),
    ("patch", "mpijobs.kubeflow.org", "-n", "{served}"),
    # Calibration: probe MPIJobs, and their results read from the launcher's log.
    ("create", "mpijobs.kubeflow.org", "-n", "{served}"),
    ("delete", "mpijobs.kubeflow.org", "-n", "{served}"),
    ("get", "pods/log", "-n", "{served}"),
    # The admission webhook: its certificate Secret and the chart's configuration, by name.
    ("create", "secrets", "-n", RELEASE_NS),
    ("update", f"secrets/{RELEASE}-webhook-tls", "-n", RELEASE_NS),
    ("patch", f"mutatingwebhookconfigurations.admissionregistration.k8s.io/{RELEASE}"),
    # What Kopf needs to follow the namespaces its globs match.
    ("list", "customresourcedefinitions.apiextensions.k8s.io"),
    ("watch", "namespaces"),
    # Server placement: the nodes servers spread over, and the volumes pinning hostPath servers to theirs.
    ("list", "nodes"),
    ("create", "persistentvolumes"),
    ("delete", "persistentvolumes"),
]

CANNOT = [
    # No cluster-wide write beyond its own kinds, its webhook configuration and hostPath servers'
    # PersistentVolumes: nothing else it provisions outside the namespaces it serves, not even reads of
    # pods or Events there.
    ("create", "statefulsets.apps", "-n", "default"),
    ("create", "statefulsets.apps", "-A"),
    ("delete", "deployments.apps", "-n", "default"),
    ("create", "configmaps", "-n", "default"),
    ("patch", "services", "-n", RELEASE_NS),
    ("delete", "persistentvolumeclaims", "-n", "default"),
    ("create", "jobs.batch", "-n", "default"),
    ("create", "mpijobs.kubeflow.org", "-n", "default"),
    ("patch", "mpijobs.kubeflow.org", "-A"),
    ("create", "events", "-n", "default"),
    ("list", "pods", "-A"),
    ("get", "pods/log", "-n", "default"),
    ("list", "configmaps", "-A"),
    ("get", "secrets", "-A"),
    ("list", "secrets", "-n", RELEASE_NS),
    ("get", "secrets", "-n", "{served}"),
    # the webhook's own Secret and configuration only
    ("get", f"secrets/{RELEASE}-other", "-n", RELEASE_NS),
    ("create", "secrets", "-n", "default"),
    ("patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io/other"),
    ("delete", f"mutatingwebhookconfigurations.admissionregistration.k8s.io/{RELEASE}"),
    ("delete", "nodes"),
    ("patch", "nodes"),
    ("get", "nodes"),
    ("create", "pods", "-n", "{served}"),
    ("create", "pods/exec", "-n", "{served}"),
    ("delete", "namespaces"),
    ("create", "clusterroles.rbac.authorization.k8s.io"),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
    ("create", "rolebindings.rbac.authorization.k8s.io", "-n", "{served}"),
    ("escalate", "clusterroles.rbac.authorization.k8s.io"),
    ("bind", "clusterroles.rbac.authorization.k8s.io"),
    ("impersonate", "serviceaccounts", "-n", "{served}"),
    ("create", "serviceaccounts/token", "-n", RELEASE_NS),
    ("create", "orangefsclusters.pfslayout.io", "-n", "{served}"),
    ("delete", "orangefsclusters.pfslayout.io", "-n", "{served}"),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("create", "pods/attach", "-n", "{served}"),
    ("create", "pods/portforward", "-n", "{served}"),
    ("create", "mutatingwebhookconfigurations.admissionregistration.k8s.io"),
    ("*", "*", "-A"),
]


@pytest.fixture(scope="module")
def served(cluster, release: str) -> Iterator[str]:  # noqa: ANN001
    """A namespace the install serves, enrolled like a user's (crd_release.enroll)."""
    with crd_namespace(cluster, "rbac") as name:
        yield name


def _fill(check: tuple[str, ...], served: str) -> tuple[str, ...]:
    return tuple(a.replace("{served}", served) for a in check)


@pytest.mark.parametrize("check", CAN, ids=lambda c: " ".join(c))
def test_service_account_can(cluster, served: str, check: tuple[str, ...]) -> None:  # noqa: ANN001
    assert can_i(cluster, *_fill(check, served)), f"the operator needs: {' '.join(_fill(check, served))}"


@pytest.mark.parametrize("check", CANNOT, ids=lambda c: " ".join(c))
def test_service_account_cannot(cluster, served: str, check: tuple[str, ...]) -> None:  # noqa: ANN001
    assert not can_i(cluster, *_fill(check, served)), \
        f"least privilege violated: {' '.join(_fill(check, served))} is allowed"


def test_can_i_matrix_is_the_documented_one(cluster, served: str) -> None:  # noqa: ANN001
    """docs/rbac.md's matrix is what the API server grants: a new verb, resource or binding fails here
    until the docs say it (PFSLAYOUT_WRITE_DOCS=1 rewrites the block from this cluster)."""
    def listing(identity: str, ns: str) -> str:
        return cluster.kubectl("auth", "can-i", "--list", f"--as={identity}", "-n", ns).stdout

    unserved = "pfs-rbac-unserved"  # matches no glob of the install; need not exist for RBAC
    parts = rbac_matrix.sections(listing, f"system:serviceaccount:{RELEASE_NS}:nobody", SA, [
        (f"Everywhere: ClusterRole `{RELEASE}` (ClusterRoleBinding)", unserved, ""),
        (f"In each served namespace, added by ClusterRole `{RELEASE}-namespace` (RoleBinding there)", served,
         unserved),
        (f"In the release namespace, added by Role `{RELEASE}-webhook-certs`", RELEASE_NS, unserved),
    ])
    live = rbac_matrix.render(parts)
    if os.environ.get("PFSLAYOUT_WRITE_DOCS") == "1":
        rbac_matrix.write(live)
    assert live == rbac_matrix.documented(), (
        "the ServiceAccount's rights differ from docs/rbac.md; explain the change there and rewrite the "
        "matrix with PFSLAYOUT_WRITE_DOCS=1 pytest e2e/tests/test_chart_install.py -k matrix. Live:\n" + live)


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
    refused = cluster.helm("install", "pfs-third", *chart_source(cluster), "-n", ns, "--create-namespace",
                           check=False)
    assert refused.returncode != 0 and "cannot be imported" in refused.stderr, refused.stderr
    try:
        cluster.helm("install", other, *chart_source(cluster), "-n", ns, "--create-namespace", "--set",
                     "crds.install=false", "--set", "replicas=1",
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
