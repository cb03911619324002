"""The Job that creates directories on an OrangeFSCluster and sets their layout hints (pure builder).

Chosen over `kubectl exec` into the client toolbox because the operator then needs no `pods/exec`
right (which would let it run anything in any pod), the Job's log is the audit of what was set, and a
Job survives an operator restart: the operator finds it again by its name, which is derived from the
hints it applies. It runs the cluster's client image with the cluster's `pvfs2tab`, non-root, read-only
root, no capabilities, no ServiceAccount token; the requester (a CostCalibration, a LayoutPolicy) owns
it, so it goes with its owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pfslayout import naming
from pfslayout.k8s.meta import Owner, content_hash, object_metadata
from pfslayout.kinds import MANAGED_BY
from pfslayout.kinds.orangefscluster.objects import container_security_context, pod_security_context
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.orangefs.dirhints import DirectoryHints, script

HINTS_COMPONENT = "hints"


def hints_digest(dirs: Sequence[DirectoryHints]) -> str:
    return content_hash(*(_digest_part(d) for d in dirs))[:10]


def _digest_part(d: DirectoryHints) -> str:
    # scan/migrate join the digest only when asked for, so the Job names of existing callers stay.
    relayout = f"\0scan={d.scan}\0migrate={d.migrate}" if d.scan or d.migrate else ""
    return f"{d.path}\0{sorted(d.xattrs.items())}\0{d.check}{relayout}"


FINISHED_TTL_S = 6 * 3600


def hint_job_name(owner: Owner, dirs: Sequence[DirectoryHints], nonce: int = 0) -> str:
    """Derived from the hints and a caller's counter (a calibration run, a policy's check number), so a
    restarted operator finds the Job again and a later check never meets the previous one's Job."""
    return naming.hint_job(owner.name, hints_digest(dirs), nonce)


def client_container(cluster: OrangeFSClusterSpec, name: str, command: str,
                     mounts: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A container of the cluster's client image that reaches the file system through its pvfs2tab
    (the hint Job's, the trace collector's copy step)."""
    return {
        "name": name,
        "image": cluster.client.image or cluster.image,
        "imagePullPolicy": cluster.image_pull_policy,
        "command": ["sh", "-c", command],
        "env": [{"name": "PVFS2TAB_FILE", "value": naming.PVFS2TAB_FILE}],
        "volumeMounts": [{"name": naming.PVFS2TAB_VOLUME, "mountPath": naming.PVFS2TAB_DIR, "readOnly": True},
                         *mounts],
        "securityContext": container_security_context(),
        # The kubelet keeps the last lines of a failed container's log in its status, so the
        # reason survives even when the log itself cannot be read.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def client_pod(cluster: OrangeFSClusterSpec, cluster_name: str, containers: list[dict[str, Any]],
               volumes: Sequence[dict[str, Any]], init: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The pod of a client Job: run once, no ServiceAccount token, non-root, the cluster's pvfs2tab,
    placed where the cluster's pods may go."""
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": pod_security_context(fs_group=False),
        "containers": containers,
        "volumes": [{"name": naming.PVFS2TAB_VOLUME, "configMap": {"name": naming.pvfs2tab_configmap(cluster_name)}},
                    *volumes],
    }
    if init:
        pod_spec["initContainers"] = list(init)
    if cluster.node_selector:
        pod_spec["nodeSelector"] = dict(cluster.node_selector)
    if cluster.tolerations:
        pod_spec["tolerations"] = [t.as_k8s() for t in cluster.tolerations]
    return pod_spec


def hint_job(cluster: OrangeFSClusterSpec, cluster_name: str, owner: Owner, dirs: Sequence[DirectoryHints],
             labels: dict[str, str], deadline_s: int = 300, nonce: int = 0) -> dict[str, Any]:
    # libpvfs2 writes the configuration it fetches from the servers to /tmp.
    hints = client_container(cluster, "hints", script(dirs), [{"name": "tmp", "mountPath": "/tmp"}])
    pod_spec = client_pod(cluster, cluster_name, [hints], [{"name": "tmp", "emptyDir": {}}])
    all_labels = {**labels, "app.kubernetes.io/component": HINTS_COMPONENT, "app.kubernetes.io/managed-by": MANAGED_BY}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": object_metadata(owner, hint_job_name(owner, dirs, nonce), all_labels),
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": deadline_s,
            # The operator deletes a finished Job once its outcome is recorded (apply_hints.release); an
            # operator stopped between the two leaves it to the TTL controller, long after any reader.
            "ttlSecondsAfterFinished": FINISHED_TTL_S,
            "template": {"metadata": {"labels": all_labels}, "spec": pod_spec},
        },
    }
