"""The test cluster itself, on the real API server: version pins, kwok nodes and pod lifecycle, Jobs,
MPIJobs through the real MPI Operator, Helm install/test, RBAC-limited ServiceAccount kubeconfigs."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from pfstestkit.cluster import Cluster

REPO = Path(__file__).resolve().parents[2]

PAUSE = "registry.k8s.io/pause:3.10"  # runs forever on kind; never pulled under kwok
BUSYBOX = "busybox:1.37"


def finishing(cluster: Cluster, name: str) -> dict:
    """A container that exits 0: under kwok any container of a Job pod does; on kind it must really."""
    if cluster.kwok:
        return {"name": name, "image": PAUSE}
    return {"name": name, "image": BUSYBOX, "command": ["true"]}


kwok_only = "a kwok Stage of the local control plane; kind runs real kubelets"


def pinned(name: str) -> str:
    text = (REPO / "e2e" / "harness" / "cluster" / "versions.env").read_text()
    match = re.search(rf"^{name}=(\S+)", text, re.M)
    assert match, f"{name} missing from versions.env"
    return match.group(1)


def test_server_and_kubectl_are_the_pinned_kubernetes(cluster: Cluster) -> None:
    version = cluster.kubectl_json("version")
    server = version["serverVersion"]["gitVersion"]
    if not cluster.kwok:  # kind: the node image of the kind release; kubectl must stay within one minor
        assert abs(int(version["serverVersion"]["minor"].rstrip("+")) - 36) <= 1, server
        return
    assert server == pinned("K8S_VERSION"), server
    assert server.startswith("v1.36."), server
    # kubectl is built from the same tree: no version skew, no v0.0.0-master.
    assert version["clientVersion"]["gitVersion"] == server
    assert version["serverVersion"]["minor"] == "36"


def test_helm_is_the_pinned_version_and_reaches_the_cluster(cluster: Cluster) -> None:
    assert cluster.helm("version", "--short").stdout.startswith(pinned("HELM_VERSION"))
    assert cluster.helm("list", "--all-namespaces", "-o", "json").stdout.strip().startswith("[")


def test_hpc_nodes_are_ready(cluster: Cluster) -> None:
    nodes = cluster.kubectl_json("get", "nodes", "-l", "pfslayout.io/hpc-node=true")["items"]
    assert len(nodes) >= 4
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", node["metadata"]["name"]
        assert not [t for t in node["spec"].get("taints", []) if t["key"].startswith("node.kubernetes.io/")]


@pytest.mark.local_cluster
def test_deployment_pod_becomes_ready(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("-n", namespace, "create", "deployment", "web", f"--image={PAUSE}", "--replicas=2")
    cluster.kubectl("-n", namespace, "rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    pods = cluster.kubectl_json("-n", namespace, "get", "pods", "-l", "app=web")["items"]
    assert len(pods) == 2
    for pod in pods:
        assert pod["status"]["phase"] == "Running"
        node = cluster.kubectl_json("get", "node", pod["spec"]["nodeName"])  # placed by the real scheduler
        assert node["metadata"]["labels"].get("pfslayout.io/hpc-node") == "true"
        assert pod["status"]["podIP"]
        conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conditions["Ready"] == "True"


@pytest.mark.local_cluster
def test_statefulset_claims_bind_through_the_kwok_storage_class(cluster: Cluster, namespace: str) -> None:
    if not cluster.kwok:
        pytest.skip(kwok_only)
    default = [sc["metadata"]["name"] for sc in cluster.kubectl_json("get", "storageclass")["items"]
               if sc["metadata"].get("annotations", {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert default == ["kwok-volume"]
    cluster.apply({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db", "replicas": 2, "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
                {"name": "c", "image": PAUSE, "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }, namespace)
    cluster.kubectl("-n", namespace, "rollout", "status", "statefulset/db", "--timeout=60s", timeout=90)
    claims = cluster.kubectl_json("-n", namespace, "get", "pvc")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1"]
    for claim in claims:
        assert claim["status"]["phase"] == "Bound"
        pv = cluster.kubectl_json("get", "pv", claim["spec"]["volumeName"])
        assert pv["spec"]["claimRef"]["name"] == claim["metadata"]["name"]
        assert pv["spec"]["capacity"]["storage"] == "1Gi"


@pytest.mark.local_cluster
def test_job_succeeds(cluster: Cluster, namespace: str) -> None:
    cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
        "spec": {"completions": 3, "parallelism": 3, "backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [finishing(cluster, "w")]}}},
    }, namespace)
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Complete", "job/work", "--timeout=60s", timeout=90)
    job = cluster.kubectl_json("-n", namespace, "get", "job", "work")
    assert job["status"]["succeeded"] == 3
    pods = cluster.kubectl_json("-n", namespace, "get", "pods", "-l", "job-name=work")["items"]
    assert [p["status"]["phase"] for p in pods].count("Succeeded") == 3
    for pod in pods:  # finished: no longer Ready, as under a kubelet
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "False"


@pytest.mark.local_cluster
def test_job_whose_pods_fail_fails(cluster: Cluster, namespace: str) -> None:
    if not cluster.kwok:
        pytest.skip(kwok_only)
    cluster.apply({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "doomed"},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": {"kwok.pfslayout.io/fail": "true"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": PAUSE}]}}},
    }, namespace)
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Failed", "job/doomed", "--timeout=60s", timeout=90)
    job = cluster.kubectl_json("-n", namespace, "get", "job", "doomed")
    assert job["status"].get("failed") == 1 and not job["status"].get("succeeded")


@pytest.mark.local_cluster
def test_mpijob_succeeds_through_the_mpi_operator(cluster: Cluster, namespace: str) -> None:
    workers = 3
    cluster.apply({
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "ring"},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                # No MPI runs: the launcher exits 0 (kwok or busybox); the operator's part is real.
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [
                    finishing(cluster, "launcher")]}}},
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [
                    {"name": "worker", "image": PAUSE}]}}},
            },
        },
    }, namespace)

    def succeeded() -> dict | None:
        job = cluster.kubectl_json("-n", namespace, "get", "mpijob", "ring")
        conds = {c["type"]: c["status"] for c in job.get("status", {}).get("conditions", [])}
        assert conds.get("Failed") != "True", json.dumps(job["status"])
        return job if conds.get("Succeeded") == "True" else None

    job = cluster.wait_until(succeeded, "MPIJob ring to succeed", timeout=90)
    # The operator really reconciled it: its launcher Job, hostfile ConfigMap and ssh Secret exist.
    launcher = cluster.kubectl_json("-n", namespace, "get", "job", "ring-launcher")
    assert launcher["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    assert launcher["status"]["succeeded"] == 1
    hostfile = cluster.kubectl_json("-n", namespace, "get", "configmap", "ring-config")["data"]["hostfile"]
    assert [line.split()[0] for line in hostfile.splitlines() if line.strip()] == [
        f"ring-worker-{i}.ring.{namespace}.svc" for i in range(workers)]
    cluster.kubectl("-n", namespace, "get", "secret", "ring-ssh")
    assert job["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1


def _write_chart(root: Path) -> Path:
    chart = root / "tiny"
    (chart / "templates" / "tests").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(textwrap.dedent("""\
        apiVersion: v2
        name: tiny
        version: 0.1.0
        kubeVersion: ">=1.36.0-0"
        """))
    (chart / "values.yaml").write_text(
        "replicas: 2\ngreeting: hello\ntestImage: registry.k8s.io/pause:3.10\ntestCommand: []\n")
    (chart / "templates" / "configmap.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "{{ .Release.Name }}-cfg"}
        data: {greeting: "{{ .Values.greeting }}", kube: "{{ .Capabilities.KubeVersion.Version }}"}
        """))
    (chart / "templates" / "deployment.yaml").write_text(textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "{{ .Release.Name }}-app"}
        spec:
          replicas: {{ .Values.replicas }}
          selector: {matchLabels: {app: "{{ .Release.Name }}"}}
          template:
            metadata: {labels: {app: "{{ .Release.Name }}"}}
            spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
        """))
    (chart / "templates" / "tests" / "test-pod.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: "{{ .Release.Name }}-test"
          annotations: {"helm.sh/hook": test}
        spec:
          restartPolicy: Never
          containers:
          - name: t
            image: {{ .Values.testImage | quote }}
            {{- with .Values.testCommand }}
            command: {{ toJson . }}
            {{- end }}
        """))
    return chart


@pytest.mark.local_cluster
def test_helm_install_wait_and_helm_test(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    chart = _write_chart(tmp_path)
    extra = [] if cluster.kwok else ["--set", f"testImage={BUSYBOX}", "--set-json", 'testCommand=["true"]']
    cluster.helm("install", "demo", str(chart), "-n", namespace, "--wait", "--timeout", "90s", *extra,
                 timeout=120)
    deploy = cluster.kubectl_json("-n", namespace, "get", "deployment", "demo-app")
    assert deploy["status"]["readyReplicas"] == 2
    cfg = cluster.kubectl_json("-n", namespace, "get", "configmap", "demo-cfg")["data"]
    assert cfg["kube"] == pinned("K8S_VERSION")  # the server's real version reached the template
    out = cluster.helm("test", "demo", "-n", namespace, "--timeout", "90s", timeout=120).stdout
    assert re.search(r"TEST SUITE:\s+demo-test", out) and re.search(r"Phase:\s+Succeeded", out), out
    pod = cluster.kubectl_json("-n", namespace, "get", "pod", "demo-test")
    assert pod["status"]["phase"] == "Succeeded"
    cluster.helm("uninstall", "demo", "-n", namespace, "--wait", "--timeout", "60s")
    assert cluster.kubectl("-n", namespace, "get", "deployment", "demo-app", check=False).returncode != 0


@pytest.mark.local_cluster
def test_pods_annotated_to_fail_fail(cluster: Cluster, namespace: str) -> None:
    if not cluster.kwok:
        pytest.skip(kwok_only)
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "bad", "annotations": {"kwok.pfslayout.io/fail": "true"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": PAUSE}]}}, namespace)
    pod = cluster.wait_until(
        lambda: (p := cluster.kubectl_json("-n", namespace, "get", "pod", "bad"))["status"].get("phase")
        in ("Failed", "Succeeded") and p, "pod bad to finish")
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions["Ready"] == "False"  # a finished pod is not Ready, as under a kubelet


def test_service_account_kubeconfig_has_only_its_rbac(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("-n", namespace, "create", "serviceaccount", "reader")
    cluster.kubectl("-n", namespace, "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
    cluster.kubectl("-n", namespace, "create", "rolebinding", "cm-reader", "--role=cm-reader",
                    f"--serviceaccount={namespace}:reader")
    cluster.kubectl("-n", namespace, "create", "configmap", "visible", "--from-literal=k=v")
    kc = cluster.service_account_kubeconfig(namespace, "reader")

    who = cluster.kubectl_json("auth", "whoami", kubeconfig=kc)
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:reader"
    assert cluster.kubectl_json("get", "configmap", "visible", kubeconfig=kc)["data"] == {"k": "v"}
    denied = cluster.kubectl("get", "secrets", kubeconfig=kc, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    denied = cluster.kubectl("-n", "default", "get", "configmaps", kubeconfig=kc, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    assert cluster.can_i("list", "configmaps", namespace=namespace, service_account=f"{namespace}:reader")
    assert not cluster.can_i("create", "configmaps", namespace=namespace, service_account=f"{namespace}:reader")
