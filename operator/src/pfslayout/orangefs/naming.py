"""Names the operator gives an OrangeFSCluster's objects, and the FS ID it derives from the object.

They are one function each so the operator, `pfslayout render` and the tests agree by construction.
"""

from __future__ import annotations

import hashlib

from pfslayout.errors import InputError

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
FS_ID_MAX = 2**31 - 1  # `ID` in fs.conf is parsed as a C int (server-config.c ARG_INT)


def server_statefulset(cluster: str) -> str:
    return f"{cluster}-server"


def server_service(cluster: str) -> str:
    # The headless Service shares the StatefulSet's name: `serviceName` then reads naturally.
    return f"{cluster}-server"


def fs_conf_configmap(cluster: str) -> str:
    return f"{cluster}-fs-conf"


def pvfs2tab_configmap(cluster: str) -> str:
    return f"{cluster}-pvfs2tab"


def client_deployment(cluster: str) -> str:
    return f"{cluster}-client"


def server_alias(statefulset: str, ordinal: int) -> str:
    """The alias is the pod name, so `-a $(POD_NAME)` names it and `gethostname()` would too."""
    return f"{statefulset}-{ordinal}"


def server_host(statefulset: str, ordinal: int, service: str, namespace: str,
                cluster_domain: str = DEFAULT_CLUSTER_DOMAIN) -> str:
    """Stable DNS name of a StatefulSet pod behind its headless Service (fully qualified, so it resolves
    the same from every namespace and without relying on the resolver's search list)."""
    return f"{server_alias(statefulset, ordinal)}.{service}.{namespace}.svc.{cluster_domain}"


def derive_fs_id(namespace: str, name: str) -> int:
    """A fixed FS ID for `namespace/name`, in 1 .. 2^31-1.

    Derived from the namespace and name only (not the UID): deleting an OrangeFSCluster with
    `reclaimPolicy: Retain` and creating it again under the same name must find storage whose
    collection ID matches, otherwise the retained data could not be served again.
    """
    if not namespace or not name:
        raise InputError("metadata", "namespace and name are required to derive the FS ID",
                         "give the OrangeFSCluster a name and a namespace")
    digest = hashlib.sha256(f"pfslayout.io/orangefs/{namespace}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % FS_ID_MAX + 1
