"""Builders of the Kubernetes objects of one OrangeFSCluster, as plain dicts ready for server-side apply.

Each builder is a pure function of the BuildInputs (typed spec + owner) and the rendered configuration, so
the unit tests check exactly what the operator applies.
"""

from __future__ import annotations

from typing import Any

from pfslayout import naming
from pfslayout.k8s.meta import canonical_json, content_hash
from pfslayout.kinds.orangefscluster import meta as m
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology
from pfslayout.orangefs import commands

# The OrangeFS image's non-root user (images/orangefs); fsGroup makes emptyDir/PVC storage writable.
SERVER_UID = 10001
SERVER_GID = 10001

CONFIG_DIR = "/etc/orangefs"
FS_CONF_KEY = "fs.conf"
STORAGE_DIR = "/var/lib/orangefs"

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


def _storage_volume_and_mount(ctx: m.BuildInputs) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    st = ctx.spec.storage
    mount: dict[str, Any] = {"name": "storage", "mountPath": STORAGE_DIR}
    if st.type == "pvc":
        return None, mount  # from volumeClaimTemplates
    if st.type == "hostPath":
        assert st.host_path is not None
        # One node directory, one sub-directory per server pod: `<path>/<pod name>`.
        mount["subPathExpr"] = "$(POD_NAME)"
        return {"name": "storage", "hostPath": {"path": st.host_path.path, "type": "DirectoryOrCreate"}}, mount
    empty: dict[str, Any] = {}
    if st.medium:
        empty["medium"] = st.medium
    if st.size is not None:
        empty["sizeLimit"] = str(st.size)
    return {"name": "storage", "emptyDir": empty}, mount


def server_statefulset(ctx: m.BuildInputs, topology: Topology, fs_conf: str, applied: dict[str, Any]
                       ) -> dict[str, Any]:
    spec, owner = ctx.spec, ctx.owner
    sts_name = naming.server_statefulset(owner.name)
    conf_path = f"{CONFIG_DIR}/{FS_CONF_KEY}"
    storage_volume, storage_mount = _storage_volume_and_mount(ctx)
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
        claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                                 "resources": {"requests": {"storage": str(spec.storage.size)}}}
        if spec.storage.storage_class_name:
            claim["storageClassName"] = spec.storage.storage_class_name
        sts_spec["volumeClaimTemplates"] = [{
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "storage", "labels": m.labels(owner, SERVER)},
            "spec": claim,
        }]
        policy = "Delete" if spec.reclaim_policy == "Delete" else "Retain"
        # The StatefulSet controller deletes (or keeps) the claims: on delete of the set, and of the
        # ordinals a confirmed scale-down removes.
        sts_spec["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": policy, "whenScaled": policy}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": m.metadata(owner, sts_name, SERVER, {m.APPLIED_ANNOTATION: canonical_json(applied)}),
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
