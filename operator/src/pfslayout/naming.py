"""Every name the operator derives from a custom object's name, and the volume names and paths its
objects share: the OrangeFSCluster's children, aliases and pod DNS names and its FS ID, a
CostCalibration's probe jobs and ConfigMaps, a LayoutPolicy's ConfigMaps and collector Jobs, the hint
Jobs of any requester, and what the shim injection adds to an MPIJob.

One function or constant each, so the operator, `pfslayout render` and the tests agree by construction.
The names are a contract with the objects already in a cluster: an upgraded operator finds what the
previous one made by these names, so each is pinned for a sample owner in tests/unit/test_naming.py.
A domain module: it imports nothing from `kinds`, `operator`, `k8s` or `cli` (tests/unit/test_import_graph.py).
"""

from __future__ import annotations

import hashlib

from pfslayout.errors import InputError

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
FS_ID_MAX = 2**31 - 1  # `ID` in fs.conf is parsed as a C int (server-config.c ARG_INT)


# ---------------------------------------------------------------------------------------------------
# OrangeFSCluster `<cluster>`
# ---------------------------------------------------------------------------------------------------
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


def auto_calibration(cluster: str) -> str:
    """The automatic CostCalibration (`spec.calibration.auto`)."""
    return f"{cluster}-calibration"


def wipe_job(cluster: str, server_pod: str) -> str:
    """The Job that removes one server's hostPath directory: named after the server pod's ordinal."""
    return f"{cluster}-wipe-{server_pod.rsplit('-', 1)[-1]}"


def server_volume(namespace: str, cluster: str, ordinal: int) -> str:
    """The PersistentVolume that pins server `ordinal`'s hostPath storage to its node (cluster-scoped, so
    the namespace is part of the name). Dots separate the parts: a namespace has none, so no two
    (namespace, cluster) pairs share a name (with dashes `a-b`/`c` and `a`/`b-c` would). Shortened with a
    hash only past the 253 characters of a name, which no usable cluster name reaches."""
    suffix = f".server-{ordinal}"
    base = f"pfslayout.{namespace}.{cluster}"
    room = 253 - len(suffix)
    if len(base) > room:
        digest = hashlib.sha256(base.encode()).hexdigest()[:8]
        base = f"{base[:room - 9].rstrip('.-')}-{digest}"
    return base + suffix


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


# The cluster's pvfs2tab as every pod that reaches the file system mounts it (the client toolbox, hint
# and collector Jobs, probe MPIJobs, and users' MPIJobs with the shim).
PVFS2TAB_DIR = "/etc/pvfs2tab"
PVFS2TAB_KEY = "pvfs2tab"  # the ConfigMap's key, so the file's name below PVFS2TAB_DIR
PVFS2TAB_FILE = f"{PVFS2TAB_DIR}/{PVFS2TAB_KEY}"
PVFS2TAB_VOLUME = "pvfs2tab"  # the volume's name in the operator's own pods


# ---------------------------------------------------------------------------------------------------
# Hint Jobs, owned by their requester (a CostCalibration, a LayoutPolicy)
# ---------------------------------------------------------------------------------------------------
def hint_job(requester: str, digest: str, nonce: int = 0) -> str:
    """`digest` stands for the hints (kinds/orangefscluster/hintjob.py), `nonce` is the requester's
    counter: a restarted operator finds the Job again and a later check never meets an earlier Job."""
    return f"{requester[:36]}-hints-{digest}-{nonce}"


# ---------------------------------------------------------------------------------------------------
# CostCalibration `<calibration>`
# ---------------------------------------------------------------------------------------------------
def short(name: str, room: int) -> str:
    """`name` cut to `room` characters, keeping it unique with a hash suffix when cut."""
    if len(name) <= room:
        return name
    return f"{name[:room - 5]}-{hashlib.sha256(name.encode()).hexdigest()[:4]}"


def probe_mpijob(calibration: str, run: int, index: int) -> str:
    # The MPI Operator names pods `<job>-worker-<i>` and `<job>-launcher-<5>`: hostnames of at most 63.
    return f"{short(calibration, 30)}-r{run}-j{index}"


def measurements_configmap(calibration: str) -> str:
    return f"{short(calibration, 240)}-measurements"


def params_configmap(calibration: str) -> str:
    """The parameters ConfigMap unless `spec.configMapName` names another."""
    return f"{calibration}-params"


# ---------------------------------------------------------------------------------------------------
# LayoutPolicy `<policy>`
# ---------------------------------------------------------------------------------------------------
def shim_configmap(policy: str) -> str:
    """The shim config (`shim.json`) the policy's MPIJobs mount."""
    return f"{policy}-shim"


def learned_configmap(policy: str) -> str:
    """The learning loop's durable record."""
    return f"{policy}-learned"


def trace_collector_job(policy: str, job_uid_hash: str) -> str:
    """The Job that collects one MPIJob's traces: named after a hash of the MPIJob's UID."""
    return f"{policy[:30]}-learn-{job_uid_hash[:10]}"


# What the injection adds to an MPIJob's launcher and worker templates (kinds/layoutpolicy/inject.py);
# suspend mode recognises an injected template by the copier's name (operator/admission/suspend.py).
SHIM_VOLUME = "pfslayout-shim"  # the emptyDir the copier fills with libpfsshim.so
SHIM_COPIER = SHIM_VOLUME  # the init container, named after the volume it fills
SHIM_CONFIG_VOLUME = "pfslayout-shim-config"
SHIM_PVFS2TAB_VOLUME = "pfslayout-pvfs2tab"
SHIM_VOLUMES = (SHIM_VOLUME, SHIM_CONFIG_VOLUME, SHIM_PVFS2TAB_VOLUME)


# ---------------------------------------------------------------------------------------------------
# The MPI Operator's names
# ---------------------------------------------------------------------------------------------------
def mpijob_launcher(mpijob: str) -> str:
    """The launcher Job the MPI Operator (v2beta1) makes for an MPIJob."""
    return f"{mpijob}-launcher"
