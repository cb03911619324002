"""The objects an OrangeFSCluster becomes, built by the pure builders the operator applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslayout.errors import InputError
from pfslayout.kinds.orangefscluster import meta as c
from pfslayout.kinds.orangefscluster.decisions import applied_record, decide
from pfslayout.kinds.orangefscluster.desired import desired
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology
from pfslayout.kinds.orangefscluster.placement import Node
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.orangefs.fsconf import parse_fs_conf

REPO = Path(__file__).resolve().parents[3]
OWNER = c.owner("demo", "lab", "0b6f7a1e-0000-4000-8000-000000000001")


def build(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = parse_spec(raw)
    p = decide(spec, OWNER.namespace, OWNER.name, None)
    d = desired(c.BuildInputs(spec, OWNER), p)
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in d.objects}


def by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(x for x in items if x["name"] == name)


EMPTY = {"servers": {"count": 3}, "storage": {"type": "emptyDir", "size": "1Gi"}}


def test_every_object_is_owned_labelled_and_namespaced() -> None:
    objs = build(EMPTY)
    assert set(objs) == {"ConfigMap/demo-fs-conf", "ConfigMap/demo-pvfs2tab", "Service/demo-server",
                         "StatefulSet/demo-server", "Deployment/demo-client"}
    for obj in objs.values():
        meta = obj["metadata"]
        assert meta["namespace"] == "lab"
        assert meta["ownerReferences"] == [{"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster",
                                            "name": "demo", "uid": OWNER.uid, "controller": True,
                                            "blockOwnerDeletion": True}]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "pfs-layout-operator"
        assert meta["labels"]["pfslayout.io/cluster"] == "demo"


def test_headless_service_publishes_not_ready_servers() -> None:
    svc = build(EMPTY)["Service/demo-server"]["spec"]
    assert svc["clusterIP"] == "None" and svc["publishNotReadyAddresses"] is True
    assert svc["ports"] == [{"name": "bmi-tcp", "port": 3334, "targetPort": 3334, "protocol": "TCP"}]
    sts = build(EMPTY)["StatefulSet/demo-server"]
    assert svc["selector"] == sts["spec"]["selector"]["matchLabels"]
    assert set(svc["selector"].items()) <= set(sts["spec"]["template"]["metadata"]["labels"].items())


def test_statefulset_runs_guarded_init_then_foreground_server_with_its_alias() -> None:
    sts = build(EMPTY)["StatefulSet/demo-server"]
    spec = sts["spec"]
    assert spec["replicas"] == 3 and spec["serviceName"] == "demo-server"
    assert spec["podManagementPolicy"] == "Parallel"
    pod = spec["template"]["spec"]
    init = by_name(pod["initContainers"], "init-storage")
    script = init["command"][2]
    assert init["command"][:2] == ["sh", "-c"]
    assert "if [ -e /var/lib/orangefs/meta/collections.db ]" in script
    assert 'pvfs2-server -f -a "$POD_NAME" /etc/orangefs/fs.conf' in script
    server = by_name(pod["containers"], "server")
    assert server["args"] == ["pvfs2-server", "-d", "-a", "$(POD_NAME)", "/etc/orangefs/fs.conf"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in server["env"]
    assert server["readinessProbe"]["tcpSocket"]["port"] == 3334
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert server["securityContext"]["capabilities"]["drop"] == ["ALL"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "demo-fs-conf"
    assert volumes["storage"]["emptyDir"] == {"sizeLimit": "1Gi"}
    assert "volumeClaimTemplates" not in spec


def test_config_hash_rolls_servers_only_when_fs_conf_changes() -> None:
    def hash_of(raw: dict[str, Any]) -> str:
        return build(raw)["StatefulSet/demo-server"]["spec"]["template"]["metadata"]["annotations"][
            c.CONFIG_HASH_ANNOTATION]
    base = hash_of(EMPTY)
    assert hash_of(EMPTY) == base
    assert hash_of({**EMPTY, "servers": {"count": 4}}) != base
    assert hash_of({**EMPTY, "distribution": {"stripSize": 1048576}}) != base
    assert hash_of({**EMPTY, "client": {"replicas": 2}}) == base
    cm = build(EMPTY)["ConfigMap/demo-fs-conf"]
    assert cm["metadata"]["annotations"][c.CONFIG_HASH_ANNOTATION] == base


def test_pvc_storage_uses_claim_templates_and_reclaim_policy() -> None:
    for policy in ("Retain", "Delete"):
        sts = build({"servers": {"count": 2}, "reclaimPolicy": policy,
                     "storage": {"type": "pvc", "size": "10Gi", "storageClassName": "fast"}})["StatefulSet/demo-server"]
        spec = sts["spec"]
        claim = spec["volumeClaimTemplates"][0]
        assert claim["metadata"]["name"] == "storage"
        assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
        assert claim["spec"]["storageClassName"] == "fast"
        assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": policy, "whenScaled": policy}
        assert "storage" not in {v["name"] for v in spec["template"]["spec"]["volumes"]}
        # hostPath-backed provisioners hand out root-owned directories that fsGroup does not change.
        init = spec["template"]["spec"]["initContainers"]
        assert [x["name"] for x in init] == ["storage-owner", "init-storage"]
        assert by_name(init, "storage-owner")["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}


HOSTPATH = {"servers": {"count": 3}, "storage": {"type": "hostPath", "hostPath": {"path": "/data/ofs"}}}
NODES = {0: Node("node-a", "host-a"), 1: Node("node-b", "host-b"), 2: Node("node-a", "host-a")}


def build_hostpath(raw: dict[str, Any], applied: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    spec = parse_spec(raw)
    d = desired(c.BuildInputs(spec, OWNER), decide(spec, OWNER.namespace, OWNER.name, applied), NODES)
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in d.objects}


def test_hostpath_storage_pins_each_server_to_its_node_through_a_prebound_volume() -> None:
    objs = build_hostpath(HOSTPATH)
    kinds = [k.split("/")[0] for k in objs]
    # the volumes first: the StatefulSet's claims find them waiting
    assert kinds == ["ConfigMap", "ConfigMap", "Service", "PersistentVolume", "PersistentVolume",
                     "PersistentVolume", "StatefulSet", "Deployment"]
    pv = objs["PersistentVolume/pfslayout.lab.demo.server-2"]
    meta = pv["metadata"]
    assert "namespace" not in meta and "ownerReferences" not in meta  # cluster-scoped: no namespaced owner
    assert meta["labels"]["pfslayout.io/cluster"] == "demo" and meta["labels"]["pfslayout.io/namespace"] == "lab"
    assert meta["annotations"] == {"pfslayout.io/node": "node-a"}
    assert pv["spec"] == {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
        "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "lab",
                     "name": "storage-demo-server-2"},
        # the directory the inline volume's subPathExpr used: existing data is found
        "hostPath": {"path": "/data/ofs/demo-server-2", "type": "DirectoryOrCreate"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host-a"]}]}]}}}
    sts = objs["StatefulSet/demo-server"]["spec"]
    (claim,) = sts["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "storage"
    # explicitly empty: no default StorageClass provisions a volume instead of the pinned one
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                             "storageClassName": ""}
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    pod = sts["template"]["spec"]
    assert "storage" not in {v["name"] for v in pod["volumes"]}
    server = by_name(pod["containers"], "server")
    assert by_name(server["volumeMounts"], "storage") == {"name": "storage", "mountPath": "/var/lib/orangefs"}
    owner = by_name(pod["initContainers"], "storage-owner")
    assert owner["command"] == ["chown", "10001:10001", "/var/lib/orangefs"]
    assert owner["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN"]}
    assert [x["name"] for x in pod["initContainers"]] == ["storage-owner", "init-storage"]
    record = yaml.safe_load(objs["StatefulSet/demo-server"]["metadata"]["annotations"][c.APPLIED_ANNOTATION])
    assert record["hostPathVolumes"] is True


def test_a_hostpath_volume_is_made_only_for_a_server_with_a_node() -> None:
    spec = parse_spec(HOSTPATH)
    d = desired(c.BuildInputs(spec, OWNER), decide(spec, "lab", "demo", None), {1: NODES[1], 5: NODES[0]})
    assert [o["metadata"]["name"] for o in d.objects if o["kind"] == "PersistentVolume"] == [
        "pfslayout.lab.demo.server-1"]  # ordinal 5 is not a server of this topology


def test_a_hostpath_statefulset_made_before_pinned_volumes_keeps_its_inline_volume_and_is_not_spread() -> None:
    """volumeClaimTemplates cannot change on a StatefulSet, and a moved server would leave its data behind."""
    spec = parse_spec(HOSTPATH)
    legacy = applied_record(spec, "lab", "demo", Topology.of(spec))
    objs = build_hostpath({**HOSTPATH, "servers": {"count": 4, "spread": "Required"}}, legacy)
    assert "PersistentVolume" not in {k.split("/")[0] for k in objs}
    sts = objs["StatefulSet/demo-server"]["spec"]
    assert "volumeClaimTemplates" not in sts
    pod = sts["template"]["spec"]
    assert by_name(pod["volumes"], "storage")["hostPath"] == {"path": "/data/ofs", "type": "DirectoryOrCreate"}
    assert by_name(by_name(pod["containers"], "server")["volumeMounts"], "storage")["subPathExpr"] == "$(POD_NAME)"
    assert "affinity" not in pod


TERM: dict[str, Any] = {
    "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "demo", "app.kubernetes.io/component": "server",
                                      "pfslayout.io/cluster": "demo"}},
    "topologyKey": "kubernetes.io/hostname"}


@pytest.mark.parametrize(("spread", "affinity"), [
    ("Required", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}),
    ("Preferred", {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": TERM}]}}),
    # Auto with no node known (pfslayout render): Preferred, which never leaves a server Pending
    ("Auto", {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": TERM}]}}),
])
def test_servers_repel_each_other_on_the_hostname(spread: str, affinity: dict[str, Any]) -> None:
    objs = build({**EMPTY, "servers": {"count": 3, "spread": spread}})
    pod = objs["StatefulSet/demo-server"]["spec"]["template"]["spec"]
    assert pod["affinity"] == affinity
    # the term selects exactly this cluster's server pods
    assert TERM["labelSelector"]["matchLabels"] == objs["StatefulSet/demo-server"]["spec"]["selector"]["matchLabels"]
    assert "affinity" not in objs["Deployment/demo-client"]["spec"]["template"]["spec"]


def test_auto_follows_the_eligible_nodes_given_to_decide() -> None:
    spec = parse_spec({**EMPTY, "servers": {"count": 3}})
    for nodes, key in ((3, "requiredDuringSchedulingIgnoredDuringExecution"),
                       (2, "preferredDuringSchedulingIgnoredDuringExecution")):
        d = desired(c.BuildInputs(spec, OWNER), decide(spec, "lab", "demo", None, eligible_nodes=nodes))
        (sts,) = [o for o in d.objects if o["kind"] == "StatefulSet"]
        assert list(sts["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]) == [key]


def test_fs_conf_and_pvfs2tab_configmaps_agree() -> None:
    objs = build(EMPTY)
    conf = parse_fs_conf(objs["ConfigMap/demo-fs-conf"]["data"]["fs.conf"])
    tab = objs["ConfigMap/demo-pvfs2tab"]["data"]["pvfs2tab"]
    uri, mount = tab.split()[:2]
    assert mount == "/mnt/orangefs"
    assert [u.rsplit("/", 1)[0] for u in uri.split(",")] == list(conf.aliases.values())


def test_client_toolbox_mounts_pvfs2tab_and_can_be_disabled() -> None:
    dep = build({**EMPTY, "client": {"replicas": 2, "image": "tools:1"}})["Deployment/demo-client"]
    pod = dep["spec"]["template"]["spec"]
    box = pod["containers"][0]
    assert dep["spec"]["replicas"] == 2 and box["image"] == "tools:1"
    assert {"name": "PVFS2TAB_FILE", "value": "/etc/pvfs2tab/pvfs2tab"} in box["env"]
    assert by_name(pod["volumes"], "pvfs2tab")["configMap"]["name"] == "demo-pvfs2tab"
    spec = parse_spec({**EMPTY, "client": {"enabled": False}})
    d = desired(c.BuildInputs(spec, OWNER), decide(spec, "lab", "demo", None))
    assert "Deployment" not in {o["kind"] for o in d.objects}
    assert d.absent == (("Deployment", "demo-client"),)


def test_scheduling_and_resources_pass_through() -> None:
    objs = build({**EMPTY, "nodeSelector": {"disk": "nvme"},
                  "tolerations": [{"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}],
                  "servers": {"count": 2, "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}})
    for key in ("StatefulSet/demo-server", "Deployment/demo-client"):
        pod = objs[key]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"disk": "nvme"}
        assert pod["tolerations"] == [{"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}]
    server = objs["StatefulSet/demo-server"]["spec"]["template"]["spec"]["containers"][0]
    assert server["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}


def test_applied_record_is_stamped_on_the_statefulset() -> None:
    sts = build(EMPTY)["StatefulSet/demo-server"]
    record = yaml.safe_load(sts["metadata"]["annotations"][c.APPLIED_ANNOTATION])
    assert record["servers"] == 3 and record["metadataServers"] == 3
    assert record["fsName"] == "orangefs" and record["port"] == 3334 and record["storageType"] == "emptyDir"
    # what Auto became, and what it was resolved for (decisions.placement_record)
    assert record["spread"] == "Preferred" and len(record["spreadBasis"]) == 16
    assert "hostPathVolumes" not in record


@pytest.mark.parametrize(("raw", "field"), [
    ({"storage": {"type": "pvc"}}, "spec.storage.size"),
    ({"storage": {"type": "emptyDir"}, "servers": {"count": 2, "metadataCount": 3}}, "spec.servers.metadataCount"),
    ({"storage": {"type": "emptyDir"}, "servers": {"count": 0}}, "spec.servers.count"),
    ({"storage": {"type": "emptyDir"}, "servers": {"count": 4},
      "distribution": {"name": "twod_stripe", "numGroups": 3}}, "spec.distribution.numGroups"),
    ({"storage": {"type": "hostPath"}}, "spec.storage.hostPath"),
    ({"storage": {"type": "nfs"}}, "spec.storage.type"),
    ({"storage": {"type": "emptyDir"}, "servers": {"count": 2, "spread": "Always"}}, "spec.servers.spread"),
])
def test_invalid_specs_raise_one_line_naming_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_spec(raw)
    assert err.value.field == field, str(err.value)
    assert "\n" not in str(err.value)


def test_example_policy_builds() -> None:
    doc = yaml.safe_load((REPO / "policies" / "orangefs-small.yaml").read_text())
    assert doc["kind"] == "OrangeFSCluster"
    spec = parse_spec(doc["spec"])
    assert 2 <= spec.servers.count <= 4
    assert build(doc["spec"])["StatefulSet/demo-server"]["spec"]["replicas"] == spec.servers.count


def _crd_spec_schema() -> dict[str, Any]:
    crd = yaml.safe_load((REPO / "crds" / "orangefsclusters.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


@pytest.mark.parametrize(("path", "attr"), [
    ("imagePullPolicy", lambda s: s.image_pull_policy),
    ("servers.count", lambda s: s.servers.count),
    ("fs.name", lambda s: s.fs.name),
    ("ports.tcp", lambda s: s.ports.tcp),
    ("distribution.name", lambda s: s.distribution.name),
    ("distribution.stripSize", lambda s: s.distribution.strip_size),
    ("distribution.numDatafiles", lambda s: s.distribution.num_datafiles),
    ("reclaimPolicy", lambda s: s.reclaim_policy),
    ("client.enabled", lambda s: s.client.enabled),
    ("client.replicas", lambda s: s.client.replicas),
    ("client.mountPath", lambda s: s.client.mount_path),
    ("storage.type", lambda s: s.storage.type),
    ("servers.spread", lambda s: s.servers.spread),
])
def test_typed_spec_defaults_match_the_crd(path: str, attr: Any) -> None:
    """The operator's model and the CRD schema must agree on every default the operator relies on."""
    node = _crd_spec_schema()
    for part in path.split("."):
        node = node["properties"][part]
    assert attr(parse_spec({"storage": {"size": "1Gi"}})) == node["default"], path


def test_the_image_has_no_crd_default_and_the_operators_applies() -> None:
    """spec.image is the one field without a CRD default: a spec naming none gets the operator's image
    (Settings.orangefs_image, the chart's images.orangefs), which parse_spec receives."""
    assert "default" not in _crd_spec_schema()["properties"]["image"]
    assert parse_spec({"storage": {"size": "1Gi"}}, "reg.example/orangefs:1").image == "reg.example/orangefs:1"


def test_wipe_job_is_pinned_to_the_node_and_removes_only_the_pods_directory() -> None:
    from pfslayout.kinds.orangefscluster.objects import wipe_job
    spec = parse_spec({"servers": {"count": 2}, "reclaimPolicy": "Delete",
                       "storage": {"type": "hostPath", "hostPath": {"path": "/data/ofs"}}})
    job = wipe_job(c.BuildInputs(spec, OWNER), "demo-server-1", "node-7", suspend=True)
    assert job["metadata"]["name"] == "demo-wipe-1" and job["spec"]["suspend"] is True
    assert job["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeName"] == "node-7" and pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["command"] == ["rm", "-rf", "--one-file-system", "/host/demo-server-1"]
    assert pod["volumes"][0]["hostPath"] == {"path": "/data/ofs", "type": "Directory"}
    # Root may not delete the server uid's files without DAC_OVERRIDE; nothing else is added.
    assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]}
    assert wipe_job(c.BuildInputs(spec, OWNER), "demo-server-1", "node-7", suspend=False)["spec"]["suspend"] is False
