"""Labels, annotations and owner references shared by every object the operator creates."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pfslayout.manifests.spec import OrangeFSClusterSpec
from pfslayout.orangefs import naming

GROUP = "pfslayout.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "OrangeFSCluster"
PLURAL = "orangefsclusters"

MANAGED_BY = "pfs-layout-operator"
CLUSTER_LABEL = f"{GROUP}/cluster"
CONFIG_HASH_ANNOTATION = f"{GROUP}/config-hash"
APPLIED_ANNOTATION = f"{GROUP}/applied"
# Consent to lose data: its value must equal the target `spec.servers.count` (see reconcile.py).
CONFIRM_SCALE_DOWN_ANNOTATION = f"{GROUP}/confirm-scale-down"

# The OrangeFS image's non-root user (images/orangefs); fsGroup makes emptyDir/PVC storage writable.
SERVER_UID = 10001
SERVER_GID = 10001

CONFIG_DIR = "/etc/orangefs"
FS_CONF_KEY = "fs.conf"
PVFS2TAB_DIR = "/etc/pvfs2tab"
PVFS2TAB_KEY = "pvfs2tab"
STORAGE_DIR = "/var/lib/orangefs"


@dataclass(frozen=True)
class Owner:
    """The OrangeFSCluster as its children see it."""

    name: str
    namespace: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": KIND, "name": self.name, "uid": self.uid,
                "controller": True, "blockOwnerDeletion": True}


@dataclass(frozen=True)
class Context:
    """Everything the builders need: the typed spec, its owner and environment facts."""

    spec: OrangeFSClusterSpec
    owner: Owner
    cluster_domain: str = naming.DEFAULT_CLUSTER_DOMAIN


def labels(owner: Owner, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "orangefs",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/part-of": "pfs-layout-operator",
        CLUSTER_LABEL: owner.name,
    }


def selector(owner: Owner, component: str) -> dict[str, str]:
    # Selectors are immutable on StatefulSets and Deployments: keep them to labels that never change.
    return {"app.kubernetes.io/instance": owner.name, "app.kubernetes.io/component": component,
            CLUSTER_LABEL: owner.name}


def metadata(owner: Owner, name: str, component: str, annotations: dict[str, str] | None = None
             ) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "namespace": owner.namespace, "labels": labels(owner, component),
                           "ownerReferences": [owner.reference()]}
    if annotations:
        out["annotations"] = annotations
    return out


def content_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def pod_security_context(fs_group: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": SERVER_UID, "runAsGroup": SERVER_GID,
                           "seccompProfile": {"type": "RuntimeDefault"}}
    if fs_group:
        out["fsGroup"] = SERVER_GID
    return out


def container_security_context() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]}}
