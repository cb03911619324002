"""The Helm chart: `helm lint --strict`, `helm template` over several value sets, the strict values
schema, and the properties the chart promises (hardened pod, least-privilege RBAC, toggles)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "pfs-layout-operator"


def uninstall_hook(d: dict[str, Any]) -> bool:
    """An object of the pre-delete hook (templates/uninstall-hook.yaml): it exists only while `helm uninstall`
    runs, so the release's own objects are counted without it (test_uninstall_hook_* check it)."""
    return ((d.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook") == "pre-delete"


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind and not uninstall_hook(d)]

Render = Callable[..., list[dict[str, Any]]]

VALUE_SETS = {
    "defaults": [],
    "crds-off": ["--set", "crds.install=false"],
    "crds-not-kept": ["--set", "crds.keep=false"],
    "webhook-off": ["--set", "webhook.enabled=false"],
    "webhook-fixed-scope-ignore": ["--set", "webhook.failurePolicy=Ignore", "--set-json",
                                   'webhook.namespaceSelector={"matchLabels":{"batch":"yes"}}'],
    "webhook-cert-manager": ["--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"],
    "webhook-own-tls": ["--set", "webhook.enabled=true", "--set", "webhook.tls.secretName=pfs-webhook-tls",
                        "--set", "webhook.tls.caBundle=TFMwdExTMUNSVWRKVGc9PQ=="],
    "no-rbac-existing-sa": ["--set", "rbac.create=false", "--set", "serviceAccount.create=false",
                            "--set", "serviceAccount.name=ops"],
    "debug-json-logs": ["--set", "operator.logLevel=debug", "--set", "operator.logFormat=json"],
    "watch-globs-and-a-name": ["--set-json", 'operator.watchNamespaces=["e2e-*","batch"]'],
    "watch-all": ["--set-json", 'operator.watchNamespaces=["*"]'],
}


@pytest.mark.parametrize("args", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_helm_lint_strict(helm: list[str], helm_env: dict[str, str], args: list[str]) -> None:
    proc = subprocess.run([*helm, "lint", "--strict", str(CHART), *args], capture_output=True, text=True,
                          timeout=120, check=False, env=helm_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("args", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_value_set_renders_valid_objects(render: Render, args: list[str]) -> None:
    docs = render(*args)
    for d in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(d), d
        assert d["metadata"].get("name"), d
    (deploy,) = by_kind(docs, "Deployment")
    # two replicas, one leader (Kopf peering); an upgrade rolls without a gap in the webhook
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["strategy"] == {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    (pdb,) = by_kind(docs, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    # a stopping replica serves on while it leaves the webhook's endpoints
    pod = deploy["spec"]["template"]["spec"]
    assert pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    assert pod["terminationGracePeriodSeconds"] == 35
    assert pdb["spec"]["selector"] == deploy["spec"]["selector"]


def operator_container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (deploy,) = by_kind(docs, "Deployment")
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    return container


def test_operator_command_is_the_kopf_contract(render: Render) -> None:
    c = operator_container(render())
    assert c["command"][:5] == ["kopf", "run", "--peering=rel-pfs-layout-operator", "--all-namespaces",
                                "--liveness=http://0.0.0.0:8080/healthz"]
    assert c["command"][-2:] == ["-m", "pfslayout.operator.main"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["PFSLAYOUT_METRICS_ADDR"] == "0.0.0.0:9090"
    assert env["PFSLAYOUT_WATCH_NAMESPACES"] == "default"
    assert env["PFSLAYOUT_NAMESPACE_ROLE"] == "rel-pfs-layout-operator-namespace"
    assert env["PFSLAYOUT_SERVICE_ACCOUNT"] == "pfs-system:rel-pfs-layout-operator"
    from_field = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"] if "valueFrom" in e}
    assert from_field == {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name", "POD_ID": "metadata.name"}
    assert env["PFSLAYOUT_PEERING_LIFETIME_SECONDS"] == "15"
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"health": 8080, "metrics": 9090, "webhook": 9443}
    assert env["PFSLAYOUT_WEBHOOK_ADDR"] == "0.0.0.0:9443"


def test_replicas_peer_through_kopfs_crd_and_prefer_different_nodes(render: Render) -> None:
    docs = render()
    (crd,) = [d for d in by_kind(docs, "CustomResourceDefinition") if d["spec"]["group"] == "kopf.dev"]
    assert crd["metadata"]["name"] == "clusterkopfpeerings.kopf.dev" and crd["spec"]["scope"] == "Cluster"
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert not by_kind(render("--set", "crds.install=false"), "CustomResourceDefinition")
    (deploy,) = by_kind(docs, "Deployment")
    term = deploy["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == deploy["spec"]["selector"]["matchLabels"]
    (deploy,) = by_kind(render("--set", "replicas=1", "--set", "podDisruptionBudget.enabled=false",
                               "--set-json", 'affinity={"nodeAffinity":{}}'), "Deployment")
    assert deploy["spec"]["replicas"] == 1 and deploy["spec"]["template"]["spec"]["affinity"] == {"nodeAffinity": {}}
    assert not by_kind(render("--set", "podDisruptionBudget.enabled=false"), "PodDisruptionBudget")


def test_pod_is_hardened(render: Render) -> None:
    docs = render()
    (deploy,) = by_kind(docs, "Deployment")
    pod = deploy["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    c = operator_container(docs)
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert c["resources"]["limits"] and c["resources"]["requests"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_the_operator_leaves_a_lost_node_after_node_loss_toleration_seconds(render: Render) -> None:
    """Kubernetes keeps a pod on a node that stopped answering for 300 s before evicting it; the chart
    makes it nodeLossTolerationSeconds (30), lets a toleration of the same key in `tolerations` win, and
    leaves Kubernetes' default with null."""
    def tolerations(*args: str) -> list[dict[str, Any]]:
        (deploy,) = by_kind(render(*args), "Deployment")
        return list(deploy["spec"]["template"]["spec"].get("tolerations") or [])
    loss = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    default = tolerations()
    assert {t["key"] for t in default} == loss
    assert all(t["effect"] == "NoExecute" and t["tolerationSeconds"] == 30 for t in default), default
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 5}
    mixed = tolerations("--set-json", f"tolerations={json.dumps([own])}", "--set", "nodeLossTolerationSeconds=90")
    assert own in mixed and len(mixed) == 2, mixed
    assert next(t for t in mixed if t["key"] == "node.kubernetes.io/not-ready")["tolerationSeconds"] == 90
    assert tolerations("--set-json", "nodeLossTolerationSeconds=null") == []


def test_crd_toggles(render: Render) -> None:
    crds = by_kind(render(), "CustomResourceDefinition")
    assert sorted(c["metadata"]["name"] for c in crds) == [
        "clusterkopfpeerings.kopf.dev", "costcalibrations.pfslayout.io", "layoutpolicies.pfslayout.io",
        "orangefsclusters.pfslayout.io"]
    assert all(c["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" for c in crds)
    assert by_kind(render("--set", "crds.install=false"), "CustomResourceDefinition") == []
    unkept = by_kind(render("--set", "crds.keep=false"), "CustomResourceDefinition")
    assert len(unkept) == 4
    assert all("helm.sh/resource-policy" not in c["metadata"].get("annotations", {}) for c in unkept)


def test_metrics_service_targets_the_operator(render: Render) -> None:
    docs = render()
    (svc,) = [s for s in by_kind(docs, "Service") if not s["metadata"]["name"].endswith("-webhook")]
    (deploy,) = by_kind(docs, "Deployment")
    labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in svc["spec"]["selector"].items())
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {"metrics": 9090, "health": 8080}
    assert by_kind(render("--set", "metrics.service.enabled=false", "--set", "webhook.enabled=false"), "Service") == []


def env_of(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in c["env"]}


def test_webhook_is_on_by_default_with_operator_certificates_and_a_managed_scope(render: Render) -> None:
    docs = render()
    (mwc,) = by_kind(docs, "MutatingWebhookConfiguration")
    (hook,) = mwc["webhooks"]
    assert hook["rules"][0]["resources"] == ["mpijobs"] and hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["rules"][0]["apiGroups"] == ["kubeflow.org"] and hook["rules"][0]["apiVersions"] == ["v2beta1"]
    assert hook["sideEffects"] == "NoneOnDryRun" and hook["failurePolicy"] == "Fail"
    assert hook["timeoutSeconds"] == 5
    # The operator patches the bundle in; until it has synced, no namespace matches.
    assert "caBundle" not in hook["clientConfig"] and hook["clientConfig"]["service"]["path"] == "/inject"
    assert hook["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["none.pfslayout.io"]}]}
    assert hook["objectSelector"]["matchExpressions"] == [
        {"key": "pfslayout.io/inject", "operator": "NotIn", "values": ["false"]}]
    svc_name = hook["clientConfig"]["service"]["name"]
    assert svc_name in {s["metadata"]["name"] for s in by_kind(docs, "Service")}
    c = operator_container(docs)
    env = env_of(c)
    assert env["PFSLAYOUT_WEBHOOK_CERTS"] == "operator" and env["PFSLAYOUT_WEBHOOK_SCOPE"] == "managed"
    assert env["PFSLAYOUT_WEBHOOK_CONFIGURATION"] == mwc["metadata"]["name"]
    assert env["PFSLAYOUT_WEBHOOK_SERVICE"] == svc_name and env["PFSLAYOUT_WEBHOOK_CERT_DIR"].startswith("/tmp/")
    assert not any(m["mountPath"] == "/etc/pfslayout/webhook-tls" for m in c["volumeMounts"])
    (role,) = by_kind(docs, "Role")
    assert role["metadata"]["namespace"] == "pfs-system"
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [env["PFSLAYOUT_WEBHOOK_SECRET"]],
                      "verbs": ["get", "update"]}]
    assert by_kind(docs, "Certificate") == []

    off = render(*VALUE_SETS["webhook-off"])
    assert by_kind(off, "MutatingWebhookConfiguration") == [] and by_kind(off, "Role") == []
    assert "PFSLAYOUT_WEBHOOK_ADDR" not in env_of(operator_container(off))

    fixed = render(*VALUE_SETS["webhook-fixed-scope-ignore"])
    (hook3,) = by_kind(fixed, "MutatingWebhookConfiguration")[0]["webhooks"]
    assert hook3["namespaceSelector"] == {"matchLabels": {"batch": "yes"}} and hook3["failurePolicy"] == "Ignore"
    assert env_of(operator_container(fixed))["PFSLAYOUT_WEBHOOK_SCOPE"] == "fixed"


def test_webhook_certificates_from_cert_manager_or_a_secret_of_ones_own(render: Render) -> None:
    docs = render(*VALUE_SETS["webhook-cert-manager"])
    (mwc,) = by_kind(docs, "MutatingWebhookConfiguration")
    (hook,) = mwc["webhooks"]
    (cert,) = by_kind(docs, "Certificate")
    assert mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        f"pfs-system/{cert['metadata']['name']}"
    assert f"{hook['clientConfig']['service']['name']}.pfs-system.svc" in cert["spec"]["dnsNames"]
    c = operator_container(docs)
    assert any(m["mountPath"] == "/etc/pfslayout/webhook-tls" for m in c["volumeMounts"])
    assert env_of(c)["PFSLAYOUT_WEBHOOK_CERTS"] == "mounted" and by_kind(docs, "Role") == []

    own = render(*VALUE_SETS["webhook-own-tls"])
    (mwc2,) = by_kind(own, "MutatingWebhookConfiguration")
    assert mwc2["webhooks"][0]["clientConfig"]["caBundle"] == "TFMwdExTMUNSVWRKVGc9PQ=="
    assert by_kind(own, "Certificate") == [] and by_kind(own, "Role") == []
    (deploy,) = by_kind(own, "Deployment")
    assert {"name": "webhook-tls", "secret": {"secretName": "pfs-webhook-tls"}} in \
        deploy["spec"]["template"]["spec"]["volumes"]


def test_own_tls_without_its_ca_is_refused_with_the_fix(helm: list[str], helm_env: dict[str, str]) -> None:
    proc = subprocess.run([*helm, "template", "rel", str(CHART), "--set", "webhook.tls.secretName=mine"],
                          capture_output=True, text=True, timeout=60, check=False, env=helm_env)
    assert proc.returncode != 0
    assert "webhook.tls.caBundle" in proc.stderr and "unset webhook.tls.secretName" in proc.stderr


def test_the_images_of_the_operators_objects_come_from_the_values(render: Any, helm: list[str],
                                                                  helm_env: dict[str, str]) -> None:
    """values `images` become the operator's settings (one place for a release's registry); an upgrade
    with --reuse-values from a release before them is refused naming the value and the flag to use."""
    (deploy,) = [d for d in render("--set", "images.orangefs=reg.example/p/orangefs:1",
                                   "--set", "images.mpi=reg.example/p/mpi:1") if d["kind"] == "Deployment"]
    env = {e["name"]: e.get("value") for e in deploy["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PFSLAYOUT_ORANGEFS_IMAGE"] == "reg.example/p/orangefs:1"
    assert env["PFSLAYOUT_MPI_IMAGE"] == "reg.example/p/mpi:1"
    proc = subprocess.run([*helm, "template", "rel", str(CHART), "--set", "images=null"],
                          capture_output=True, text=True, timeout=60, check=False, env=helm_env)
    assert proc.returncode != 0
    assert "values images.orangefs is not set: upgrade with --reset-then-reuse-values" in proc.stderr, proc.stderr


def _granted(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for r in role["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in r[field], f"wildcard in {r}"
        assert "nonResourceURLs" not in r
        # the named rules: the chart's own webhook configuration (its CA bundle and scope) and peering object
        assert "resourceNames" not in r or r["resources"] in (["mutatingwebhookconfigurations"],
                                                               ["clusterkopfpeerings"])
        for g in r["apiGroups"]:
            for res in r["resources"]:
                granted.setdefault((g, res), set()).update(r["verbs"])
    return granted


READS = {"get", "list", "watch"}


def test_rbac_is_least_privilege(render: Render) -> None:
    docs = render()
    roles = {r["metadata"]["name"]: r for r in by_kind(docs, "ClusterRole")}
    assert set(roles) == {"rel-pfs-layout-operator", "rel-pfs-layout-operator-namespace"}
    (binding,) = by_kind(docs, "ClusterRoleBinding")
    (sa,) = by_kind(docs, "ServiceAccount")
    subject = [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "pfs-system"}]
    assert binding["roleRef"]["name"] == "rel-pfs-layout-operator" and binding["subjects"] == subject
    # The per-namespace rights are bound only in the namespace the defaults serve.
    (rb,) = [b for b in by_kind(docs, "RoleBinding") if b["roleRef"]["kind"] == "ClusterRole"]
    assert rb["metadata"]["namespace"] == "default" and rb["subjects"] == subject
    assert rb["roleRef"]["name"] == "rel-pfs-layout-operator-namespace"
    wide = _granted(roles["rel-pfs-layout-operator"])
    local = _granted(roles["rel-pfs-layout-operator-namespace"])
    # Cluster-wide: no write outside its own kinds, its webhook configuration and the PersistentVolumes
    # that pin hostPath servers to their nodes (cluster-scoped: no RoleBinding can grant them).
    for (group, res), verbs in wide.items():
        assert group in ("pfslayout.io", "admissionregistration.k8s.io") or verbs <= READS \
            or (group, res) in (("", "persistentvolumes"), ("kopf.dev", "clusterkopfpeerings")), (group, res, verbs)
    # leader election: Kopf's peering objects, written only to create and keep this release's
    assert wide[("kopf.dev", "clusterkopfpeerings")] == {"list", "watch", "create", "get", "patch"}
    assert wide[("", "persistentvolumes")] == {"get", "list", "create", "patch", "delete"}
    # the nodes servers spread over (servers.spread) are listed, nothing more
    assert wide[("", "nodes")] == {"list"} and ("", "nodes") not in local
    assert ("", "persistentvolumes") not in local
    # what Kopf watches besides its own kinds, read cluster-wide (its handlers skip unserved namespaces)
    assert wide[("apps", "statefulsets")] == wide[("kubeflow.org", "mpijobs")] == {"list", "watch"}
    forbidden = [("", "secrets"), ("", "nodes/proxy"), ("", "nodes/status"), ("", "pods/exec"),
                 ("rbac.authorization.k8s.io", "clusterroles"),
                 ("rbac.authorization.k8s.io", "clusterrolebindings"), ("rbac.authorization.k8s.io", "roles"),
                 ("rbac.authorization.k8s.io", "rolebindings"), ("", "serviceaccounts/token"),
                 ("", "pods/attach"), ("", "pods/portforward")]
    for granted in (wide, local):
        for key in forbidden:
            assert key not in granted, f"{key} must not be granted"
        for verbs in granted.values():
            assert not verbs & {"escalate", "bind", "impersonate", "deletecollection"}
    assert ("", "pods") not in wide and local[("", "pods")] == READS
    assert wide[("pfslayout.io", "orangefsclusters/status")] >= {"patch"}
    # probe MPIJobs are created and deleted by calibration; user MPIJobs are only patched
    assert local[("kubeflow.org", "mpijobs")] == READS | {"create", "patch", "delete"}
    # calibration results come from the launcher's log: read-only, nothing that runs code in a pod
    assert local[("", "pods/log")] == {"get"}
    assert wide[("apiextensions.k8s.io", "customresourcedefinitions")] == READS
    assert "create" not in wide[("pfslayout.io", "orangefsclusters")]
    named = {r["resources"][0]: r for r in roles["rel-pfs-layout-operator"]["rules"] if r.get("resourceNames")}
    assert set(named) == {"mutatingwebhookconfigurations", "clusterkopfpeerings"}
    for rule in named.values():
        assert rule["resourceNames"] == ["rel-pfs-layout-operator"] and rule["verbs"] == ["get", "patch"]


def test_watch_namespaces_bind_names_leave_globs_to_enrollment(render: Render) -> None:
    docs = render(*VALUE_SETS["watch-globs-and-a-name"])
    c = operator_container(docs)
    # Kopf watches everything; the handlers' filter serves the list (kopf's own --namespace drops a
    # namespace being deleted, stranding the finalizers inside it)
    assert c["command"][3] == "--all-namespaces" and not [a for a in c["command"] if a.startswith("--namespace")]
    assert {e["name"]: e.get("value") for e in c["env"]}["PFSLAYOUT_WATCH_NAMESPACES"] == "e2e-*,batch"
    (rb,) = [b for b in by_kind(docs, "RoleBinding") if b["roleRef"]["kind"] == "ClusterRole"]
    assert rb["metadata"]["namespace"] == "batch"
    assert [b["metadata"]["name"] for b in by_kind(docs, "ClusterRoleBinding")] == ["rel-pfs-layout-operator"]


def test_watch_all_binds_the_namespace_rights_cluster_wide(render: Render) -> None:
    docs = render(*VALUE_SETS["watch-all"])
    assert {e["name"]: e.get("value") for e in operator_container(docs)["env"]}["PFSLAYOUT_WATCH_NAMESPACES"] == "*"
    assert sorted(b["roleRef"]["name"] for b in by_kind(docs, "ClusterRoleBinding")) == [
        "rel-pfs-layout-operator", "rel-pfs-layout-operator-namespace"]
    assert [b for b in by_kind(docs, "RoleBinding") if b["roleRef"]["kind"] == "ClusterRole"] == []


def test_existing_service_account_without_rbac(render: Render) -> None:
    docs = render(*VALUE_SETS["no-rbac-existing-sa"])
    assert by_kind(docs, "ClusterRole") == [] and by_kind(docs, "ServiceAccount") == []
    (deploy,) = by_kind(docs, "Deployment")
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "ops"


def test_helm_test_hook_pod(render: Render) -> None:
    pods = by_kind(render(), "Pod")
    (pod,) = pods
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["restartPolicy"] == "Never"
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "/healthz" in script and ".svc:8080" in script
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


# ---- values.schema.json, checked by jsonschema and by helm itself --------------------------------

def schema() -> dict[str, Any]:
    return json.loads((CHART / "values.schema.json").read_text())


def values() -> dict[str, Any]:
    return yaml.safe_load((CHART / "values.yaml").read_text())


def test_values_yaml_satisfies_the_schema() -> None:
    jsonschema.Draft7Validator.check_schema(schema())
    jsonschema.validate(values(), schema())


BAD_VALUES = {
    "unknown top-level key": ({"replicaCount": 2}, "replicaCount"),
    "typo in crds": ({"crds": {"install": True, "keep": True, "instal": False}}, "instal"),
    "bad pull policy": ({"image": {"repository": "x", "pullPolicy": "Sometimes"}}, "Sometimes"),
    "bad log level": ({"operator": {"logLevel": "chatty"}}, "chatty"),
    "port out of range": ({"metrics": {"port": 70000}}, "70000"),
    "bad failure policy": ({"webhook": {"failurePolicy": "Retry"}}, "Retry"),
    "root user": ({"runAsUser": 0}, "0"),
    "namespace not a DNS label": ({"operator": {"watchNamespaces": ["Batch_1"]}}, "Batch_1"),
    "negated glob (Kopf syntax fnmatch lacks)": ({"operator": {"watchNamespaces": ["!kube-*"]}}, "!kube-*"),
    "no namespace": ({"operator": {"watchNamespaces": []}}, "[]"),
    "no replica": ({"replicas": 0}, "0"),
    "a shutdown delay past a minute": ({"shutdownDelaySeconds": 600}, "600"),
    "a budget that blocks every drain": ({"podDisruptionBudget": {"enabled": True, "maxUnavailable": 0}}, "0"),
    "a peering lifetime too short to renew": ({"peering": {"lifetimeSeconds": 1}}, "1"),
}


@pytest.mark.parametrize(("patch", "needle"), BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_schema_rejects_bad_values(patch: dict[str, Any], needle: str) -> None:
    merged = values()
    for k, v in patch.items():
        merged[k] = v if not isinstance(v, dict) else {**merged.get(k, {}), **v}
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.validate(merged, schema())
    assert needle in str(err.value.message)


def test_helm_enforces_the_schema(helm: list[str], helm_env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("operator:\n  logLevel: chatty\n")
    proc = subprocess.run([*helm, "template", "rel", str(CHART), "-f", str(bad)], capture_output=True,
                          text=True, timeout=60, check=False, env=helm_env)
    assert proc.returncode != 0 and "logLevel" in proc.stderr


def test_rendered_crds_equal_the_crds_folder(render: Render) -> None:
    """What Helm actually installs is crds/ (only the chart's annotations are added)."""
    source = {}
    for path in sorted((CHART.parent.parent / "crds").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        source[doc["metadata"]["name"]] = doc
    rendered = {}
    for doc in by_kind(render(), "CustomResourceDefinition"):
        if doc["spec"]["group"] == "kopf.dev":
            continue  # Kopf's own peering CRD (templates/peering-crd.yaml), not a pfslayout.io kind
        annotations = doc["metadata"].pop("annotations")
        assert annotations["pfslayout.io/source"].startswith("crds/")
        rendered[doc["metadata"]["name"]] = doc
    assert rendered == source


def test_uninstall_hook_stops_the_operator_then_releases_its_objects_with_rights_of_its_own(render: Render) -> None:
    docs = render("--set-json", 'operator.watchNamespaces=["e2e-*","batch"]')
    hook = [d for d in docs if uninstall_hook(d)]
    assert sorted(d["kind"] for d in hook) == ["ClusterRole", "ClusterRoleBinding", "Job", "Role", "RoleBinding",
                                              "ServiceAccount"]
    weights = {d["kind"]: int(d["metadata"]["annotations"]["helm.sh/hook-weight"]) for d in hook}
    assert max(w for k, w in weights.items() if k != "Job") < weights["Job"]  # its rights exist before it runs
    assert all(d["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
               for d in hook)
    (job,) = [d for d in hook if d["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "rel-pfs-layout-operator-uninstall" and pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["command"] == ["python3", "-m", "pfslayout.operator.uninstall", "--namespace=pfs-system",
                            "--deployment=rel-pfs-layout-operator",
                            "--selector=app.kubernetes.io/instance=rel,app.kubernetes.io/component=operator",
                            "--watch-namespaces=e2e-*,batch", "--timeout=150", "--peering=rel-pfs-layout-operator"]
    assert c["image"] == operator_container(docs)["image"] and job["spec"]["activeDeadlineSeconds"] == 180
    assert c["securityContext"]["readOnlyRootFilesystem"] and pod["securityContext"]["runAsNonRoot"]
    # the selector names the operator's pods, not the hook's own
    (deploy,) = by_kind(docs, "Deployment")
    assert deploy["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "operator"
    assert job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "uninstall"
    (cluster_role,) = [d for d in hook if d["kind"] == "ClusterRole"]
    assert _granted(cluster_role) == {**{("pfslayout.io", r): {"get", "list", "patch"}
                                         for r in ("orangefsclusters", "costcalibrations", "layoutpolicies")},
                                      ("kopf.dev", "clusterkopfpeerings"): {"delete"}}
    (peer,) = [r for r in cluster_role["rules"] if r.get("resourceNames")]
    assert peer["resourceNames"] == ["rel-pfs-layout-operator"]  # only the release's own peering object
    (role,) = [d for d in hook if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "pfs-system"
    assert role["rules"] == [{"apiGroups": ["apps"], "resources": ["deployments/scale"],
                              "resourceNames": ["rel-pfs-layout-operator"], "verbs": ["patch"]},
                             {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    for binding in (d for d in hook if d["kind"].endswith("Binding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rel-pfs-layout-operator-uninstall",
                                        "namespace": "pfs-system"}]


@pytest.mark.parametrize("args", [["--set", "uninstall.releaseObjects=false"],
                                  VALUE_SETS["no-rbac-existing-sa"]], ids=["off", "no-rbac"])
def test_uninstall_hook_can_be_turned_off(render: Render, args: list[str]) -> None:
    assert [d for d in render(*args) if uninstall_hook(d)] == []


@pytest.mark.parametrize("value", ["0", "59", "3601"])
def test_uninstall_timeout_out_of_range_is_refused_by_the_schema(helm: list[str], helm_env: dict[str, str],
                                                                 value: str) -> None:
    proc = subprocess.run([*helm, "template", "rel", str(CHART), "--set", f"uninstall.timeoutSeconds={value}"],
                          capture_output=True, text=True, timeout=120, check=False, env=helm_env)
    assert proc.returncode != 0 and "/uninstall/timeoutSeconds" in proc.stderr, proc.stderr
