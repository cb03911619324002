"""Builders of the Kubernetes objects of one OrangeFSCluster, as plain dicts ready for server-side apply.

Each builder is a pure function of the BuildInputs (typed spec + owner) and the rendered configuration, so
the unit tests check exactly what the operator applies.
"""

from __future__ import annotations

from typing import Any

from pfslayout import naming
from pfslayout.k8s.meta import Owner, canonical_json, content_hash
from pfslayout.kinds.orangefscluster import meta as m
from pfslayout.kinds.orangefscluster.decisions import ApplyDecision
from pfslayout.kinds.orangefscluster.placement import TOPOLOGY_KEY, Node
from pfslayout.orangefs import commands

# The OrangeFS image's non-root user (images/orangefs); fsGroup makes emptyDir/PVC storage writable.
SERVER_UID = 10001
SERVER_GID = 10001

CONFIG_DIR = "/etc/orangefs"
FS_CONF_KEY = "fs.conf"
STORAGE_DIR = "/var/lib/orangefs"
STORAGE_VOLUME = "storage"  # the servers' volume, and the claim template's name
# The size a hostPath server's PersistentVolume and claim state. Nothing enforces it for hostPath (the
# directory is not sized, the CRD forbids storage.size there); the binder only needs capacity >= request.
HOSTPATH_CAPACITY = "1Gi"

SERVER = "server"
CLIENT = "client"
CONFIG = "config"


def pod_security_context(fs_group: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": SERVER_UID, "runAsGroup": SERVER_GID,
                           "seccompProfile": {"type": "RuntimeDefault"}}
    if fs_group:
        out["fsGroup"] = SERVER_GID
    return out


def container_security_context() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]}}


def fs_conf_configmap(ctx: m.BuildInputs, fs_conf: str) -> dict[str, Any]:
    owner = ctx.owner
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": m.metadata(owner, naming.fs_conf_configmap(owner.name), CONFIG,
                               {m.CONFIG_HASH_ANNOTATION: content_hash(fs_conf)}),
        "data": {FS_CONF_KEY: fs_conf},
    }


def pvfs2tab_configmap(ctx: m.BuildInputs, pvfs2tab: str) -> dict[str, Any]:
    owner = ctx.owner
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": m.metadata(owner, naming.pvfs2tab_configmap(owner.name), CONFIG),
        "data": {naming.PVFS2TAB_KEY: pvfs2tab},
    }


def headless_service(ctx: m.BuildInputs) -> dict[str, Any]:
    owner = ctx.owner
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": m.metadata(owner, naming.server_service(owner.name), SERVER),
        "spec": {
            "clusterIP": "None",
            # Servers dial each other (precreate) while starting, before any is Ready.
            "publishNotReadyAddresses": True,
            "selector": m.selector(owner, SERVER),
            "ports": [{"name": "bmi-tcp", "port": ctx.spec.ports.tcp, "targetPort": ctx.spec.ports.tcp,
                       "protocol": "TCP"}],
        },
    }


def _pod_name_env() -> dict[str, Any]:
    return {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def _storage_volume_and_mount(ctx: m.BuildInputs, hostpath_volumes: bool
                              ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    st = ctx.spec.storage
    mount: dict[str, Any] = {"name": STORAGE_VOLUME, "mountPath": STORAGE_DIR}
    if st.type == "pvc" or hostpath_volumes:
        return None, mount  # from volumeClaimTemplates
    if st.type == "hostPath":
        assert st.host_path is not None
        # A StatefulSet made before hostPath volumes were pinned (decisions.py): one node directory, one
        # sub-directory per server pod, `<path>/<pod name>` -- the directory hostpath_volume holds.
        mount["subPathExpr"] = "$(POD_NAME)"
        return {"name": STORAGE_VOLUME, "hostPath": {"path": st.host_path.path, "type": "DirectoryOrCreate"}}, mount
    empty: dict[str, Any] = {}
    if st.medium:
        empty["medium"] = st.medium
    if st.size is not None:
        empty["sizeLimit"] = str(st.size)
    return {"name": STORAGE_VOLUME, "emptyDir": empty}, mount


def server_affinity(owner: Owner, spread: str | None) -> dict[str, Any] | None:
    """The server pods' `affinity` (placement.py): one server per node (Required) or as few per node as
    the scheduler manages (Preferred, at the highest weight); None leaves it out, as older operators did."""
    term = {"labelSelector": {"matchLabels": m.selector(owner, SERVER)}, "topologyKey": TOPOLOGY_KEY}
    if spread == "Required":
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if spread == "Preferred":
        return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term}]}}
    return None


def _claim_template(owner: Owner, storage: str, storage_class: str | None) -> dict[str, Any]:
    claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        claim["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": STORAGE_VOLUME, "labels": m.labels(owner, SERVER)}, "spec": claim}


def hostpath_volume(ctx: m.BuildInputs, ordinal: int, node: Node) -> dict[str, Any]:
    """Server `ordinal`'s hostPath storage as a PersistentVolume pinned to `node`, pre-bound to the claim
    the StatefulSet makes for that ordinal: the scheduler then places that server, and only it, on the
    node holding its data. The directory is the one the inline volume used, `<path>/<pod name>`.
    Retain: deleting the volume object never touches the directory (the wipe Jobs do, reclaimPolicy
    Delete)."""
    spec, owner = ctx.spec, ctx.owner
    assert spec.storage.host_path is not None
    sts = naming.server_statefulset(owner.name)
    pod = naming.server_alias(sts, ordinal)
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": m.cluster_scoped_metadata(owner, naming.server_volume(owner.namespace, owner.name, ordinal),
                                              SERVER, {m.NODE_ANNOTATION: node.name}),
        "spec": {
            "capacity": {"storage": HOSTPATH_CAPACITY},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            # Empty on both sides: no StorageClass (nor the cluster's default) provisions anything here.
            "storageClassName": "",
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": owner.namespace,
                         "name": f"{STORAGE_VOLUME}-{pod}"},
            "hostPath": {"path": f"{spec.storage.host_path.path}/{pod}", "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": TOPOLOGY_KEY, "operator": "In", "values": [node.hostname]}]}]}},
        },
    }


def server_statefulset(ctx: m.BuildInputs, decision: ApplyDecision, fs_conf: str) -> dict[str, Any]:
    spec, owner, topology = ctx.spec, ctx.owner, decision.topology
    sts_name = naming.server_statefulset(owner.name)
    conf_path = f"{CONFIG_DIR}/{FS_CONF_KEY}"
    storage_volume, storage_mount = _storage_volume_and_mount(ctx, decision.hostpath_volumes)
    config_mount = {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}
    tmp_mount = {"name": "tmp", "mountPath": "/tmp"}
    mounts = [config_mount, storage_mount, tmp_mount]
    image = {"image": spec.image, "imagePullPolicy": spec.image_pull_policy}
    init_script = commands.storage_init_script(conf_path, f"{STORAGE_DIR}/meta", f"{STORAGE_DIR}/data",
                                               '"$POD_NAME"')
    init_containers: list[dict[str, Any]] = []
    if spec.storage.type in ("hostPath", "pvc"):
        # A DirectoryOrCreate hostPath is created root-owned; hand it to the server's user, nothing more.
        # Claims need it too: hostPath-backed provisioners (local-path, kwok's test provisioner) create
        # root-owned directories, and the kubelet applies fsGroup to neither.
        init_containers.append({
            "name": "storage-owner", **image,
            "command": ["chown", f"{SERVER_UID}:{SERVER_GID}", STORAGE_DIR],
            "env": [_pod_name_env()], "volumeMounts": [storage_mount],
            "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}},
        })
    init_containers.append({
        "name": "init-storage", **image,
        "command": ["sh", "-c", init_script],
        "env": [_pod_name_env()], "volumeMounts": mounts,
        "securityContext": container_security_context(),
    })
    port = spec.ports.tcp
    probe = {"tcpSocket": {"port": port}, "periodSeconds": 10, "failureThreshold": 3}
    server: dict[str, Any] = {
        "name": "server", **image,
        # $(POD_NAME) is expanded by the kubelet: the alias is the pod name.
        "args": commands.server_args(conf_path, "$(POD_NAME)"),
        "env": [_pod_name_env()],
        "ports": [{"name": "bmi-tcp", "containerPort": port, "protocol": "TCP"}],
        "readinessProbe": {**probe, "initialDelaySeconds": 2},
        "livenessProbe": {**probe, "initialDelaySeconds": 30},
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
    }
    if spec.servers.resources is not None and spec.servers.resources.as_k8s():
        server["resources"] = spec.servers.resources.as_k8s()
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": naming.fs_conf_configmap(owner.name)}},
        {"name": "tmp", "emptyDir": {}},
    ]
    if storage_volume is not None:
        volumes.append(storage_volume)
    pod_spec: dict[str, Any] = {
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_security_context(),
        "terminationGracePeriodSeconds": 30,
        "initContainers": init_containers,
        "containers": [server],
        "volumes": volumes,
    }
    if spec.node_selector:
        pod_spec["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        pod_spec["tolerations"] = [t.as_k8s() for t in spec.tolerations]
    affinity = server_affinity(owner, decision.spread)
    if affinity is not None:
        pod_spec["affinity"] = affinity
    sts_spec: dict[str, Any] = {
        "serviceName": naming.server_service(owner.name),
        "replicas": topology.servers,
        # Servers do not depend on each other's start order; start (and add) them together.
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "RollingUpdate"},
        "selector": {"matchLabels": m.selector(owner, SERVER)},
        "template": {
            "metadata": {
                "labels": m.labels(owner, SERVER),
                # A new fs.conf (servers added, distribution changed) restarts the servers with it.
                "annotations": {m.CONFIG_HASH_ANNOTATION: content_hash(fs_conf)},
            },
            "spec": pod_spec,
        },
    }
    if spec.storage.type == "pvc":
        sts_spec["volumeClaimTemplates"] = [_claim_template(owner, str(spec.storage.size),
                                                            spec.storage.storage_class_name or None)]
        policy = "Delete" if spec.reclaim_policy == "Delete" else "Retain"
        # The StatefulSet controller deletes (or keeps) the claims: on delete of the set, and of the
        # ordinals a confirmed scale-down removes.
        sts_spec["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": policy, "whenScaled": policy}
    elif decision.hostpath_volumes:
        # Each claim binds the ordinal's pre-bound hostPath volume (hostpath_volume); "" so that no
        # default StorageClass provisions one instead.
        sts_spec["volumeClaimTemplates"] = [_claim_template(owner, HOSTPATH_CAPACITY, "")]
        # The claims only point at the volumes; the data follows reclaimPolicy through the wipe Jobs. They
        # go with the set, and stay on scale-down so that a server added again finds its node and data.
        sts_spec["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete", "whenScaled": "Retain"}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": m.metadata(owner, sts_name, SERVER,
                               {m.APPLIED_ANNOTATION: canonical_json(decision.applied)}),
        "spec": sts_spec,
    }


def client_deployment(ctx: m.BuildInputs, pvfs2tab: str) -> dict[str, Any]:
    spec, owner = ctx.spec, ctx.owner
    container: dict[str, Any] = {
        "name": "toolbox",
        "image": spec.client.image or spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        # A toolbox: it idles until someone runs pvfs2-* tools in it (kubectl exec, hint Jobs use the
        # same image and mounts).
        "command": ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"],
        "env": [{"name": "PVFS2TAB_FILE", "value": naming.PVFS2TAB_FILE}],
        "volumeMounts": [{"name": naming.PVFS2TAB_VOLUME, "mountPath": naming.PVFS2TAB_DIR, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": container_security_context(),
    }
    if spec.client.resources is not None and spec.client.resources.as_k8s():
        container["resources"] = spec.client.resources.as_k8s()
    pod_spec: dict[str, Any] = {
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_security_context(fs_group=False),
        "containers": [container],
        "volumes": [{"name": naming.PVFS2TAB_VOLUME, "configMap": {"name": naming.pvfs2tab_configmap(owner.name)}},
                    {"name": "tmp", "emptyDir": {}}],
    }
    if spec.node_selector:
        pod_spec["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        pod_spec["tolerations"] = [t.as_k8s() for t in spec.tolerations]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": m.metadata(owner, naming.client_deployment(owner.name), CLIENT),
        "spec": {
            "replicas": spec.client.replicas,
            "selector": {"matchLabels": m.selector(owner, CLIENT)},
            "template": {
                "metadata": {"labels": m.labels(owner, CLIENT),
                             "annotations": {m.CONFIG_HASH_ANNOTATION: content_hash(pvfs2tab)}},
                "spec": pod_spec,
            },
        },
    }


WIPE = "wipe"


def wipe_job(ctx: m.BuildInputs, pod_name: str, node: str, suspend: bool) -> dict[str, Any]:
    """Removes one server's hostPath directory (`<path>/<pod name>`) on the node it ran on.

    Created suspended while the servers still run (the Jobs remember which node held which server),
    resumed once the server pods are gone. Root with one capability, DAC_OVERRIDE: the directory's
    parent was created by the kubelet (root-owned), so removing the pod's directory needs uid 0, and
    what is inside belongs to the server's uid, which root without DAC_OVERRIDE may not delete (found
    on a real node: `rm` failed with EACCES and the data stayed).
    """
    spec, owner = ctx.spec, ctx.owner
    assert spec.storage.host_path is not None
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeName": node,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "wipe", "image": spec.image, "imagePullPolicy": spec.image_pull_policy,
            "command": ["rm", "-rf", "--one-file-system", f"/host/{pod_name}"],
            "volumeMounts": [{"name": "host", "mountPath": "/host"}],
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]}},
        }],
        "volumes": [{"name": "host", "hostPath": {"path": spec.storage.host_path.path, "type": "Directory"}}],
    }
    if spec.tolerations:
        pod_spec["tolerations"] = [t.as_k8s() for t in spec.tolerations]
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": m.metadata(owner, naming.wipe_job(owner.name, pod_name), WIPE),
        "spec": {
            "suspend": suspend,
            "backoffLimit": 2,
            "activeDeadlineSeconds": 300,
            "template": {"metadata": {"labels": m.labels(owner, WIPE)}, "spec": pod_spec},
        },
    }
