"""Labels, annotations and owner of the objects an OrangeFSCluster owns, and the builders' inputs (BuildInputs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pfslayout import naming
from pfslayout.k8s import meta
from pfslayout.kinds import GROUP, MANAGED_BY, ORANGEFS_CLUSTER
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec

CLUSTER_LABEL = f"{GROUP}/cluster"
CONFIG_HASH_ANNOTATION = f"{GROUP}/config-hash"
APPLIED_ANNOTATION = f"{GROUP}/applied"
# Consent to lose data: its value must equal the target `spec.servers.count` (see decisions.py).
CONFIRM_SCALE_DOWN_ANNOTATION = f"{GROUP}/confirm-scale-down"
# Cluster-scoped children (the hostPath servers' PersistentVolumes) carry no owner reference -- a
# namespaced owner cannot own them -- so their labels name the namespace too. A volume's annotation names
# the node it pins its server to (its node affinity holds the node's hostname label, which may differ).
NAMESPACE_LABEL = f"{GROUP}/namespace"
NODE_ANNOTATION = f"{GROUP}/node"


def owner(name: str, namespace: str, uid: str) -> meta.Owner:
    """The OrangeFSCluster `namespace/name` as its children see it."""
    return meta.Owner(ORANGEFS_CLUSTER, name, namespace, uid)


@dataclass(frozen=True)
class BuildInputs:
    """Everything the builders need: the typed spec, its owner and environment facts."""

    spec: OrangeFSClusterSpec
    owner: meta.Owner
    cluster_domain: str = naming.DEFAULT_CLUSTER_DOMAIN


def labels(owner: meta.Owner, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "orangefs",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/part-of": "pfs-layout-operator",
        CLUSTER_LABEL: owner.name,
    }


def selector(owner: meta.Owner, component: str) -> dict[str, str]:
    # Selectors are immutable on StatefulSets and Deployments: keep them to labels that never change.
    return {"app.kubernetes.io/instance": owner.name, "app.kubernetes.io/component": component,
            CLUSTER_LABEL: owner.name}


def metadata(owner: meta.Owner, name: str, component: str, annotations: dict[str, str] | None = None
             ) -> dict[str, Any]:
    return meta.object_metadata(owner, name, labels(owner, component), annotations)


def cluster_scoped_selector(owner: meta.Owner, component: str) -> dict[str, str]:
    return {**selector(owner, component), NAMESPACE_LABEL: owner.namespace}


def cluster_scoped_metadata(owner: meta.Owner, name: str, component: str, annotations: dict[str, str]
                            ) -> dict[str, Any]:
    """`metadata` of a cluster-scoped child: no namespace and no owner reference (the deletion handlers
    remove it), found again by its labels."""
    return {"name": name, "labels": {**labels(owner, component), NAMESPACE_LABEL: owner.namespace},
            "annotations": annotations}
