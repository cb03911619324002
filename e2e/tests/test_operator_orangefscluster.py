"""The operator reconciling OrangeFSClusters on a real API server: the chart installed, the operator
running as a local process (the `operator` fixture, e2e/testkit/pfstestkit/local_operator.py) with the chart
ServiceAccount's RBAC-limited token, `policies/orangefs-small.yaml` applied, every object and the status
checked, scaled up, a refused scale-down and its confirmation, fields the API server refuses, Events,
metrics, deletion and clean-up (PVCs kept with Retain, removed with Delete). On the local control plane
kwok makes the pods Ready."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslayout.operator import finalizer
from pfstestkit.crd_release import enroll, served_namespace
from pfstestkit.kinds import OFS
from pfstestkit.lanes import current
from pfstestkit.local_operator import Operator, local_operator
from pfstestkit.ofs_pods import READY_TIMEOUT, why_not_ready

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "policies" / "orangefs-small.yaml"


def get_ofs(cluster, ns: str, name: str) -> dict[str, Any]:  # noqa: ANN001
    return cluster.kubectl_json("get", OFS, name, "-n", ns)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), {})


def wait_ready(cluster, op: Operator, ns: str, name: str, servers: int) -> dict[str, Any]:  # noqa: ANN001
    def probe() -> dict[str, Any] | None:
        assert op.alive(), f"operator exited:\n{op.log_tail()}"
        obj = get_ofs(cluster, ns, name)
        st = obj.get("status") or {}
        ready = condition(obj, "Ready")
        if (st.get("phase") == "Ready" and st.get("readyServers") == servers and st.get("servers") == servers
                and ready.get("status") == "True"
                and ready.get("observedGeneration") == obj["metadata"]["generation"]
                and st.get("observedGeneration") == obj["metadata"]["generation"]):
            return obj
        return None
    try:
        return cluster.wait_until(probe, f"{ns}/{name} Ready with {servers} servers", timeout=READY_TIMEOUT)
    except AssertionError as err:
        raise AssertionError(f"{err}\nstatus: {json.dumps(get_ofs(cluster, ns, name).get('status'))}\n"
                             f"{why_not_ready(cluster, ns, name)}\noperator log:\n{op.log_tail()}") from None


def render(*args: str) -> str:
    out = subprocess.run([sys.executable, "-c", "from pfslayout.cli import main; main()", "render", *args],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def events(cluster, ns: str, name: str) -> list[dict[str, Any]]:  # noqa: ANN001
    items = cluster.kubectl_json("get", "events", "-n", ns, "--field-selector",
                                 f"involvedObject.kind=OrangeFSCluster,involvedObject.name={name}")["items"]
    return [{"type": e["type"], "reason": e["reason"], "message": e.get("message", "")} for e in items]


def wait_event(cluster, ns: str, name: str, reason: str, needle: str = "") -> dict[str, Any]:  # noqa: ANN001
    return cluster.wait_until(
        lambda: next((e for e in events(cluster, ns, name) if e["reason"] == reason and needle in e["message"]), None),
        f"Event {reason} {needle!r} on {ns}/{name}", timeout=30)


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        head, value = line.rsplit(" ", 1)
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    refs = obj["metadata"].get("ownerReferences") or []
    return any(r["uid"] == owner["metadata"]["uid"] and r["kind"] == "OrangeFSCluster" and r.get("controller")
               for r in refs)


def test_operator_identity_is_the_limited_service_account(cluster, operator: Operator) -> None:  # noqa: ANN001
    cfg = yaml.safe_load(operator.kubeconfig.read_text())
    assert "token" in cfg["users"][0]["user"] and "client-certificate-data" not in cfg["users"][0]["user"]
    denied = cluster.kubectl("get", "secrets", "-n", current().release_ns, kubeconfig=operator.kubeconfig, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    status, body = operator.get(operator.health_url)
    assert status == 200 and "reconciles" in body


def test_a_served_namespace_not_enrolled_says_how_and_recovers_once_enrolled(cluster, operator: Operator  # noqa: ANN001
                                                                             ) -> None:
    """The install serves `e2e-*` (a glob): a matching namespace without the admin's RoleBinding gets a
    Ready=False NamespaceNotEnrolled condition with the exact command, and nothing of the cluster (the
    ServiceAccount may not create it); after the RoleBinding, the same object provisions."""
    ns, name = f"{current().prefix}unenrolled-{uuid.uuid4().hex[:6]}", "small"
    cluster.kubectl("create", "namespace", ns)
    try:
        cluster.kubectl("apply", "-n", ns, "-f", str(SMALL))

        def refused() -> dict[str, Any] | None:
            assert operator.alive(), f"operator exited:\n{operator.log_tail()}"
            ready = condition(get_ofs(cluster, ns, name), "Ready")
            return ready if ready.get("reason") == "NamespaceNotEnrolled" else None
        ready = cluster.wait_until(refused, f"{ns}/{name} NamespaceNotEnrolled", timeout=60)
        assert ready["status"] == "False"
        assert (f"`kubectl -n {ns} create rolebinding pfs-layout-operator --clusterrole={current().namespace_role} "
                f"--serviceaccount={current().service_account}`") in ready["message"]
        assert "forbidden" in ready["message"]  # the API server's own words follow the command
        assert cluster.kubectl("get", "configmaps,statefulsets", "-n", ns, "-l", f"pfslayout.io/cluster={name}",
                               "-o", "name").stdout.strip() == ""
        enroll(cluster, ns)
        wait_ready(cluster, operator, ns, name, 2)
    finally:
        cluster.kubectl("delete", "-n", ns, OFS, "--all", "--timeout=60s", check=False, timeout=90)
        cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)


def test_small_cluster_lifecycle(cluster, operator: Operator, namespace: str) -> None:  # noqa: ANN001
    ns, name = namespace, "small"
    cluster.kubectl("apply", "-n", ns, "-f", str(SMALL))
    ofs = wait_ready(cluster, operator, ns, name, 2)

    # --- every object, owned by the cluster, with the content the CLI renders for the same manifest
    fs_conf = cluster.kubectl_json("get", "configmap", f"{name}-fs-conf", "-n", ns)
    assert fs_conf["data"]["fs.conf"] == render("fs-conf", "--from", str(SMALL), "--namespace", ns)
    tab = cluster.kubectl_json("get", "configmap", f"{name}-pvfs2tab", "-n", ns)
    assert tab["data"]["pvfs2tab"] == render("pvfs2tab", "--from", str(SMALL), "--namespace", ns)
    sts = cluster.kubectl_json("get", "statefulset", f"{name}-server", "-n", ns)
    svc = cluster.kubectl_json("get", "service", f"{name}-server", "-n", ns)
    dep = cluster.kubectl_json("get", "deployment", f"{name}-client", "-n", ns)
    for obj in (fs_conf, tab, sts, svc, dep):
        assert owned_by(obj, ofs), obj["metadata"]
    assert sts["spec"]["replicas"] == 2 and sts["spec"]["serviceName"] == f"{name}-server"
    pod = sts["spec"]["template"]["spec"]
    assert pod["containers"][0]["args"] == ["pvfs2-server", "-d", "-a", "$(POD_NAME)", "/etc/orangefs/fs.conf"]
    assert "collections.db" in pod["initContainers"][-1]["command"][2]
    assert sts["spec"]["template"]["metadata"]["annotations"]["pfslayout.io/config-hash"] == \
        fs_conf["metadata"]["annotations"]["pfslayout.io/config-hash"]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    toolbox_env = dep["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "PVFS2TAB_FILE", "value": "/etc/pvfs2tab/pvfs2tab"} in toolbox_env
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"pfslayout.io/cluster={name}")["items"]
    assert sorted(p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith(f"{name}-server-")) == \
        [f"{name}-server-0", f"{name}-server-1"]

    # --- status
    st = ofs["status"]
    assert st["fsId"] == json.loads(render("fs-conf", "--from", str(SMALL), "--namespace", ns, "--json"))["fsId"]
    ep = st["endpoints"]
    assert ep["service"] == f"{name}-server" and ep["fsConfConfigMap"] == f"{name}-fs-conf"
    assert ep["servers"][1]["url"] == f"tcp://{name}-server-1.{name}-server.{ns}.svc.cluster.local:3334"
    assert all(s["ready"] for s in ep["servers"]) and ep["uri"] == tab["data"]["pvfs2tab"].split()[0]
    assert {c["type"] for c in st["conditions"]} == {"Ready", "ServersAvailable", "NodesReady", "SpecApplied",
                                                     "ServersSpread"}
    reasons = {e["reason"] for e in events(cluster, ns, name)}
    assert {"Created", "PhaseReady"} <= reasons, reasons

    # --- scale up: a third alias and fixed-slot ranges, the old ranges untouched
    old_conf = fs_conf["data"]["fs.conf"]
    cluster.kubectl("patch", OFS, name, "-n", ns, "--type", "merge", "-p", '{"spec":{"servers":{"count":3}}}')
    wait_ready(cluster, operator, ns, name, 3)
    new_conf = cluster.kubectl_json("get", "configmap", f"{name}-fs-conf", "-n", ns)["data"]["fs.conf"]
    assert f"Alias {name}-server-2 " in new_conf
    for line in old_conf.splitlines():
        if line.strip().startswith("Range "):
            assert line in new_conf.splitlines(), line
    assert cluster.kubectl_json("get", "statefulset", f"{name}-server", "-n", ns)["spec"]["replicas"] == 3
    wait_event(cluster, ns, name, "Scaled", "2 -> 3")

    # --- scale down without consent: refused and reported, nothing applied
    cluster.kubectl("patch", OFS, name, "-n", ns, "--type", "merge", "-p", '{"spec":{"servers":{"count":2}}}')

    def refused() -> dict[str, Any] | None:
        obj = get_ofs(cluster, ns, name)
        cond = condition(obj, "SpecApplied")
        ok = (cond.get("reason") == "ScaleDownRefused"
              and cond.get("observedGeneration") == obj["metadata"]["generation"])
        return obj if ok else None
    obj = cluster.wait_until(refused, "the scale-down refusal", timeout=30)
    assert obj["status"]["phase"] == "Degraded" and obj["status"]["servers"] == 3
    assert condition(obj, "Ready")["status"] == "False"
    assert "pfslayout.io/confirm-scale-down=2" in condition(obj, "SpecApplied")["message"]
    assert cluster.kubectl_json("get", "statefulset", f"{name}-server", "-n", ns)["spec"]["replicas"] == 3
    warning = wait_event(cluster, ns, name, "ScaleDownRefused")
    assert warning["type"] == "Warning"

    # --- consent for exactly that count applies it
    cluster.kubectl("annotate", OFS, name, "-n", ns, "pfslayout.io/confirm-scale-down=2")
    wait_ready(cluster, operator, ns, name, 2)
    assert cluster.kubectl_json("get", "statefulset", f"{name}-server", "-n", ns)["spec"]["replicas"] == 2

    # --- what OrangeFS cannot change live is refused by the API server, naming the field
    for patch, needle in (('{"spec":{"fs":{"name":"other"}}}', "fs.name is immutable"),
                          ('{"spec":{"storage":{"type":"pvc","size":"1Gi"}}}', "storage.type is immutable"),
                          ('{"spec":{"ports":{"tcp":4000}}}', "ports.tcp is immutable")):
        out = cluster.kubectl("patch", OFS, name, "-n", ns, "--type", "merge", "-p", patch, check=False)
        assert out.returncode != 0 and needle in out.stderr, out.stderr

    # --- a deleted child is re-created
    cluster.kubectl("delete", "statefulset", f"{name}-server", "-n", ns, "--wait=false")
    cluster.wait_until(lambda: (cluster.kubectl("get", "statefulset", f"{name}-server", "-n", ns, "-o",
                                                "jsonpath={.metadata.uid}", check=False).stdout
                                not in ("", sts["metadata"]["uid"])), "the StatefulSet re-created", timeout=60)
    wait_ready(cluster, operator, ns, name, 2)

    # --- metrics count what happened
    status, text = operator.get(operator.metrics_url)
    assert status == 200
    assert metric(text, "pfslayout_reconcile_total", kind="OrangeFSCluster", handler="create", result="success") >= 1
    assert metric(text, "pfslayout_reconcile_total", kind="OrangeFSCluster", handler="update", result="success") >= 3
    assert metric(text, "pfslayout_reconcile_duration_seconds_count", kind="OrangeFSCluster", handler="update") >= 3
    assert metric(text, "pfslayout_object_changes_total", object_kind="StatefulSet", action="created") >= 2

    # --- delete: the finalizer runs, children go with their owner
    cluster.kubectl("delete", OFS, name, "-n", ns, "--timeout=60s", timeout=90)
    wait_event(cluster, ns, name, "Deleting", "emptyDir")
    for kind, child in (("configmap", f"{name}-fs-conf"), ("configmap", f"{name}-pvfs2tab"),
                        ("service", f"{name}-server"), ("statefulset", f"{name}-server"),
                        ("deployment", f"{name}-client")):
        cluster.wait_until(lambda k=kind, c=child: cluster.kubectl("get", k, c, "-n", ns, check=False).returncode != 0,
                           f"{kind}/{child} garbage-collected", timeout=60)


@pytest.mark.parametrize("policy", ["Retain", "Delete"])
def test_pvc_claims_follow_reclaim_policy(cluster, operator: Operator, namespace: str, policy: str) -> None:  # noqa: ANN001
    ns, name = namespace, f"claims-{policy.lower()}"
    manifest = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
                "spec": {"servers": {"count": 2}, "storage": {"type": "pvc", "size": "64Mi"},
                         "reclaimPolicy": policy, "client": {"enabled": False}}}
    cluster.apply(manifest, namespace=ns)
    claims = [f"storage-{name}-server-0", f"storage-{name}-server-1"]

    def all_claims() -> bool:
        got = cluster.kubectl_json("get", "pvc", "-n", ns)["items"]
        return sorted(c["metadata"]["name"] for c in got) == claims
    cluster.wait_until(all_claims, "the StatefulSet's claims", timeout=60)
    sts = cluster.kubectl_json("get", "statefulset", f"{name}-server", "-n", ns)
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": policy, "whenScaled": policy}
    assert cluster.kubectl("get", "deployment", f"{name}-client", "-n", ns, check=False).returncode != 0
    obj = get_ofs(cluster, ns, name)
    assert obj["status"]["phase"] in ("Provisioning", "Ready")  # no provisioner here: claims may stay Pending

    cluster.kubectl("delete", OFS, name, "-n", ns, "--timeout=60s", timeout=90)
    wait_event(cluster, ns, name, "Deleting", f"reclaimPolicy {policy}")
    cluster.wait_until(lambda: cluster.kubectl("get", "statefulset", f"{name}-server", "-n", ns,
                                               check=False).returncode != 0, "the StatefulSet gone", timeout=60)
    if policy == "Retain":
        time.sleep(3)  # give the garbage collector the chance to get it wrong
        assert all_claims(), "Retain must keep the claims"
        kept = cluster.kubectl_json("get", "pvc", "-n", ns)["items"]
        for c in kept:
            assert not c["metadata"].get("deletionTimestamp"), c["metadata"]
        # The same name again re-attaches the kept claims (same FS ID, storage kept by the init step).
        cluster.apply(manifest, namespace=ns)
        again = cluster.wait_until(lambda: (get_ofs(cluster, ns, name).get("status") or {}).get("fsId"),
                                   "the re-created cluster's status", timeout=60)
        assert again == obj["status"]["fsId"]
        cluster.wait_until(lambda: cluster.kubectl("get", "statefulset", f"{name}-server", "-n", ns,
                                                   check=False).returncode == 0, "the StatefulSet again", timeout=60)
        time.sleep(2)
        pvcs = cluster.kubectl_json("get", "pvc", "-n", ns)["items"]
        after = {c["metadata"]["name"]: c["metadata"]["uid"] for c in pvcs}
        assert after == {c["metadata"]["name"]: c["metadata"]["uid"] for c in kept}
        cluster.kubectl("delete", OFS, name, "-n", ns, "--timeout=60s", timeout=90)
    else:
        def gone_or_going() -> bool:
            got = cluster.kubectl_json("get", "pvc", "-n", ns)["items"]
            return all(c["metadata"].get("deletionTimestamp") for c in got)
        cluster.wait_until(gone_or_going, "the claims deleted", timeout=60)


def test_hostpath_delete_wipes_each_servers_directory_on_its_node(cluster, operator: Operator,  # noqa: ANN001
                                                                  namespace: str) -> None:
    ns, name = namespace, "wiped"
    manifest = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
                "spec": {"servers": {"count": 2}, "reclaimPolicy": "Delete", "client": {"enabled": False},
                         "storage": {"type": "hostPath", "hostPath": {"path": "/var/lib/pfslayout-e2e"}}}}
    cluster.apply(manifest, namespace=ns)
    wait_ready(cluster, operator, ns, name, 2)
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"pfslayout.io/cluster={name}")["items"]
    nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    assert sorted(nodes) == [f"{name}-server-0", f"{name}-server-1"]

    cluster.kubectl("delete", OFS, name, "-n", ns, "--timeout=120s", timeout=150)
    wiped = wait_event(cluster, ns, name, "StorageWiped")
    assert f"{name}-wipe-0" in wiped["message"] and f"{name}-wipe-1" in wiped["message"]
    scheduled = [e["message"] for e in events(cluster, ns, name) if e["reason"] == "WipeScheduled"]
    for pod, node in nodes.items():
        assert any(pod in m and m.endswith(f"on {node}") for m in scheduled), scheduled


def test_an_operator_of_other_namespaces_leaves_the_finalizer_and_an_earlier_one_is_taken_over(
        cluster, operator: Operator, namespace: str, tmp_path: Path) -> None:  # noqa: ANN001
    """Two operators with different `watchNamespaces`: the one serving elsewhere must not lift this
    one's finalizer (Kopf lifts its finalizer from every object its filters exclude: with one name for
    all, a deleted cluster vanished without its deletion handlers while e2e lanes ran side by side), and
    the finalizer an earlier operator version left (the original name) is taken over, so deletion still
    runs the handlers and finishes."""
    ns, name = namespace, "scoped"
    mine = finalizer.name(current().watch)
    assert mine != finalizer.LEGACY
    elsewhere = (f"{current().prefix}elsewhere-none-*",)  # matches no namespace of this test
    assert finalizer.name(elsewhere) != mine
    manifest = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
                "spec": {"servers": {"count": 1}, "client": {"enabled": False},
                         "storage": {"type": "emptyDir", "size": "64Mi"}}}
    with local_operator(cluster, operator.kubeconfig, tmp_path, watch=elsewhere) as other:
        cluster.apply(manifest, namespace=ns)
        obj = wait_ready(cluster, operator, ns, name, 1)
        assert obj["metadata"]["finalizers"] == [mine], obj["metadata"]
        # An earlier version's finalizer beside it, as an upgrade finds it: taken over, the other kept.
        cluster.kubectl("patch", OFS, name, "-n", ns, "--type=json", "-p",
                        json.dumps([{"op": "add", "path": "/metadata/finalizers/0", "value": finalizer.LEGACY},
                                    {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/keep"}]))
        cluster.wait_until(
            lambda: get_ofs(cluster, ns, name)["metadata"].get("finalizers") == [mine, "example.com/keep"],
            f"{finalizer.LEGACY} taken over as {mine}", timeout=30)
        cluster.kubectl("delete", OFS, name, "-n", ns, "--wait=false")
        wait_event(cluster, ns, name, "Deleting", "emptyDir")  # the deletion handler ran
        cluster.wait_until(lambda: get_ofs(cluster, ns, name)["metadata"].get("finalizers") == ["example.com/keep"],
                           "only the foreign finalizer left after the handlers", timeout=30)
        assert other.alive(), other.log_tail()
        assert not [e for e in events(cluster, ns, name) if e["reason"] == "FinalizerConflict"]
        cluster.kubectl("patch", OFS, name, "-n", ns, "--type=json", "-p",
                        '[{"op": "remove", "path": "/metadata/finalizers"}]')
        cluster.wait_until(lambda: cluster.kubectl("get", OFS, name, "-n", ns, check=False).returncode != 0,
                           f"{ns}/{name} gone", timeout=30)


@pytest.mark.parametrize("storage", ["hostPath", "pvc"])
def test_deleting_the_whole_namespace_finishes(cluster, operator: Operator, storage: str) -> None:  # noqa: ANN001
    """`kubectl delete namespace` with a cluster in it: the namespace controller deletes the operator's
    RoleBinding with everything else and refuses new objects (the wipe Jobs), so the cleanup handlers get
    403s. They let the deletion finish, saying why in the log: before, the finalizer stayed and the
    namespace hung in Terminating forever."""
    ns, name = f"{current().prefix}nsdel-{uuid.uuid4().hex[:6]}", "doomed"
    with served_namespace(cluster, ns):
        spec: dict[str, Any] = {"servers": {"count": 2}, "reclaimPolicy": "Delete", "client": {"enabled": False}}
        spec["storage"] = ({"type": "hostPath", "hostPath": {"path": "/var/lib/pfslayout-e2e"}} if storage == "hostPath"
                           else {"type": "pvc", "size": "1Gi"})
        cluster.apply({"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
                       "spec": spec}, namespace=ns)
        wait_ready(cluster, operator, ns, name, 2)
        cluster.kubectl("delete", "namespace", ns, "--wait=false")

        def gone() -> bool:
            assert operator.alive(), f"operator exited:\n{operator.log_tail()}"
            return cluster.kubectl("get", "namespace", ns, check=False).returncode != 0
        cluster.wait_until(gone, f"namespace {ns} deleted", timeout=180, interval=2)


@pytest.mark.parametrize("example", ["orangefs-pvc.yaml", "orangefs-2d.yaml"])
def test_other_example_clusters_are_provisioned(cluster, operator: Operator, namespace: str,  # noqa: ANN001
                                                example: str) -> None:
    path = REPO / "policies" / example
    doc = yaml.safe_load(path.read_text())
    ns, name, count = namespace, doc["metadata"]["name"], doc["spec"]["servers"]["count"]
    cluster.kubectl("apply", "-n", ns, "-f", str(path))
    sts = cluster.wait_until(lambda: cluster.kubectl("get", "statefulset", f"{name}-server", "-n", ns, "-o", "json",
                                                     check=False).stdout, f"StatefulSet {name}-server", timeout=60)
    assert json.loads(sts)["spec"]["replicas"] == count
    fs_conf = cluster.kubectl_json("get", "configmap", f"{name}-fs-conf", "-n", ns)["data"]["fs.conf"]
    assert fs_conf == render("fs-conf", "--from", str(path), "--namespace", ns)
    if doc["spec"]["storage"]["type"] == "pvc":
        # No volume provisioner on the local control plane: the claims exist, the servers wait for them.
        cluster.wait_until(lambda: len(cluster.kubectl_json("get", "pvc", "-n", ns)["items"]) == count,
                           f"{count} claims", timeout=60)
    else:
        wait_ready(cluster, operator, ns, name, count)
    cluster.kubectl("delete", OFS, name, "-n", ns, "--timeout=60s", timeout=90)
