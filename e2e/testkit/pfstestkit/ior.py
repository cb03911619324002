"""IOR as a user runs it on OrangeFS: an MPIJob of the project's MPI image writing and reading one shared
file through ROMIO's pvfs2: driver, and the summary IOR prints (the real-pod tiers: e2e and multinode)."""

from __future__ import annotations

from typing import Any

from pfslayout.images import DEFAULT_MPI_IMAGE
from pfstestkit.kinds import MOUNT
from pfstestkit.mpijobs import spread_workers
from pfstestkit.real import place

MPI_IMAGE = DEFAULT_MPI_IMAGE
IOR_BLOCK = "4m"
IOR_TRANSFER = "256k"


def ior_mpijob(name: str, ofs: str, workers: int, ranks: int, mode: str, *, spread: bool = False) -> dict[str, Any]:
    """An MPIJob as a user writes it today (before shim injection): the project's MPI image, MPICH, the
    cluster's pvfs2tab mounted in launcher and workers, IOR writing and reading one shared file through
    ROMIO's pvfs2: driver with its own data checks (-W -R). `spread`: each worker on a node of its own
    (required pod anti-affinity on the node name), as the multinode tier needs."""
    pvfs2tab = {"name": "pvfs2tab", "configMap": {"name": f"{ofs}-pvfs2tab"}}
    mount = {"name": "pvfs2tab", "mountPath": "/etc/pvfs2tab", "readOnly": True}
    security = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    pod_security = {"runAsUser": 10001, "runAsGroup": 10001, "runAsNonRoot": True,
                    "seccompProfile": {"type": "RuntimeDefault"}}
    # In `args`: the image's entrypoint runs first — it waits for the workers' names (ssh gives up at once
    # on a name that does not resolve yet) and gives Hydra the pod's interface (docs/images.md).
    script = (
        "set -e; "
        f"mpiexec -n {ranks} hostname | sort | uniq -c; "
        f"mpiexec -n {ranks} ior -a MPIIO -w -r -W -R -C -e -g -b {IOR_BLOCK} -t {IOR_TRANSFER} "
        f"-o pvfs2:{MOUNT}/ior/shared.dat -k"
    )
    doc: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": max(1, ranks // workers),
            "mpiImplementation": "MPICH",
            # The launcher starts once the workers run sshd (the MPI Operator's advice for Hydra).
            "launcherCreationPolicy": "WaitForWorkersReady",
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0, "activeDeadlineSeconds": 600},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                    "securityContext": pod_security,
                    "containers": [{"name": "launcher", "image": MPI_IMAGE, "imagePullPolicy": "IfNotPresent",
                                    "args": ["bash", "-c", script], "securityContext": security,
                                    "volumeMounts": [mount]}],
                    "volumes": [pvfs2tab]}}},
                "Worker": {"replicas": workers, "template": {"spec": {
                    "securityContext": pod_security,
                    "containers": [{"name": "worker", "image": MPI_IMAGE, "imagePullPolicy": "IfNotPresent",
                                    "securityContext": security, "volumeMounts": [mount]}],
                    "volumes": [pvfs2tab]}}},
            },
        },
    }
    if spread:
        spread_workers(doc)
    return place(doc, mode)


def ior_summary(log: str) -> dict[str, dict[str, str]]:
    """IOR's "Summary of all tests" table, one row per operation, keyed by its column headers (IOR
    4.0.0's JSON output is not valid JSON once a warning lands in it, so the table is what is read)."""
    lines = log[log.index("Summary of all tests:"):].splitlines()
    header = next(line.split() for line in lines if line.startswith("Operation"))
    rows = {}
    for line in lines:
        fields = line.split()
        if fields and fields[0] in ("write", "read") and len(fields) == len(header):
            rows[fields[0]] = dict(zip(header, fields, strict=True))
    return rows
