"""Builders of a CostCalibration's child objects (pure): the probe MPIJobs, the measurements ConfigMap
and the parameters ConfigMap.

A probe job is a Kubeflow MPIJob (v2beta1, MPICH): `grid.nodes` workers with `grid.ranksPerNode` slots
each running sshd, and a launcher whose shell writes each invocation's grid file, runs `pfsprobe`
under `mpiexec` and prints the `pfsprobe/1` document between two marker lines. The operator reads it
back from the launcher's log (docs/operator.md, "Results channel").
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from pfslayout import naming
from pfslayout.images import DEFAULT_MPI_IMAGE
from pfslayout.k8s.meta import Owner, object_metadata
from pfslayout.kinds import GROUP, MANAGED_BY, MPI_IMAGE_UID
from pfslayout.kinds.costcalibration.probe_plan import Invocation, ProbeJob
from pfslayout.kinds.costcalibration.spec import CostCalibrationSpec
from pfslayout.kinds.orangefscluster.spec import Toleration

MPIJOB_API = "kubeflow.org/v2beta1"
CALIBRATION_LABEL = f"{GROUP}/calibration"
RUN_LABEL = f"{GROUP}/run"
JOB_LABEL = f"{GROUP}/probe-job"
RUN_ANNOTATION = f"{GROUP}/run"
RUN_FOR_ANNOTATION = f"{GROUP}/run-for"
PLAN_ANNOTATION = f"{GROUP}/plan"
RECALIBRATE_ANNOTATION = f"{GROUP}/recalibrate"

BEGIN = "PFSLAYOUT-PROBE-BEGIN"
END = "PFSLAYOUT-PROBE-END"
NO_PROBE = "pfslayout-probe: pfsprobe is not in this image"
PROBE_UID = MPI_IMAGE_UID  # the MPI image's mpiuser (images/mpi)
# The MPI image's worker command (docs/images.md), its pid file moved to the pod's /tmp volume: the root
# file system is read-only (the image's sshd_config keeps it in $HOME, which users' jobs may rely on).
SSHD = "/usr/sbin/sshd -De -f /home/mpiuser/.sshd_config -o PidFile=/tmp/sshd.pid"
INDEX_KEY = "jobs.json"


def labels(name: str, component: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"app.kubernetes.io/name": "costcalibration", "app.kubernetes.io/instance": name,
            "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": MANAGED_BY,
            "app.kubernetes.io/part-of": "pfs-layout-operator", CALIBRATION_LABEL: name, **(extra or {})}


def _check(what: str) -> str:
    msg = (f"{NO_PROBE} ({what}); set spec.probeImage to an image with pfsprobe, MPICH and sshd, such as "
           f"{DEFAULT_MPI_IMAGE}")
    return f"command -v pfsprobe >/dev/null 2>&1 || {{ echo {shlex.quote(msg)} >&2; exit 127; }}"


# Hydra's proxies on the workers connect back to the launcher by the name in its control-port string,
# and the launcher's DNS record may not exist yet when they start (they then fail and mpiexec waits
# forever). With -iface the string carries the pod interface's address instead.
POD_IFACE = "eth0"


def _invocation(inv: Invocation, i: int, ranks: int) -> str:
    # Rank 0 runs on a worker, not on the launcher: the grid travels in the environment (-genv) and each
    # rank writes it to its own file; the document comes back on rank 0's stdout, which mpiexec forwards.
    out = f"/tmp/probe-{i}.json"
    targets = " ".join(f"--target {shlex.quote(f'{k}={p}')}" for k, p in inv.targets)
    rank_cmd = ('f=/tmp/pfsprobe-grid-$$.json; printf "%s" "$PFSLAYOUT_GRID" > "$f" && exec pfsprobe --grid "$f" '
                f"--backend {inv.backend} --servers {inv.servers} {targets} --out -")
    return "\n".join([
        f"grid={shlex.quote(json.dumps(inv.grid, separators=(',', ':')))}",
        f"mpiexec -iface {POD_IFACE} -n {ranks} -genv PVFS2TAB_FILE {naming.PVFS2TAB_FILE} "
        f"-genv PFSLAYOUT_GRID \"$grid\" "
        f"sh -c {shlex.quote(rank_cmd)} > {out}",
        f"echo {BEGIN} {inv.key}", f"cat {out}", "echo", f"echo {END} {inv.key}",
    ])


def launcher_script(job: ProbeJob, ranks: int) -> str:
    wait_dns = ("for h in $(sed -e 's/[: ].*//' -e '/^#/d' -e '/^$/d' /etc/mpi/hostfile); do "
                "for i in $(seq 60); do getent hosts \"$h\" >/dev/null && break; sleep 1; done; done")
    parts = ["set -eu", _check("launcher"), wait_dns]
    parts += [_invocation(inv, i, ranks) for i, inv in enumerate(job.invocations)]
    return "\n".join(parts) + "\n"


def probe_mpijob(spec: CostCalibrationSpec, owner: Owner, cluster_name: str, run: int, job: ProbeJob,
                 node_selector: dict[str, str], tolerations: list[Toleration]) -> dict[str, Any]:
    g = spec.grid
    name = naming.probe_mpijob(owner.name, run, job.index)
    pod_labels = labels(owner.name, "probe", {RUN_LABEL: str(run), JOB_LABEL: str(job.index)})
    pod_security = {"runAsUser": PROBE_UID, "runAsGroup": PROBE_UID, "runAsNonRoot": True,
                    "seccompProfile": {"type": "RuntimeDefault"}}
    security = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}
    pvfs2tab = {"name": naming.PVFS2TAB_VOLUME, "configMap": {"name": naming.pvfs2tab_configmap(cluster_name)}}
    # /tmp is all either role writes: the launcher its documents, each rank (on a worker) its grid file,
    # sshd its pid file.
    mounts = [{"name": naming.PVFS2TAB_VOLUME, "mountPath": naming.PVFS2TAB_DIR, "readOnly": True},
              {"name": "tmp", "mountPath": "/tmp"}]

    def container(role: str, command: list[str]) -> dict[str, Any]:
        c: dict[str, Any] = {"name": role, "image": spec.probe_image, "imagePullPolicy": spec.image_pull_policy,
                             "command": command, "securityContext": security,
                             "volumeMounts": mounts,
                             # a failed container's last log lines land in its status: the reason
                             # survives even where logs cannot be read
                             "terminationMessagePolicy": "FallbackToLogsOnError"}
        if spec.resources is not None and spec.resources.as_k8s():
            c["resources"] = spec.resources.as_k8s()
        return c

    def pod(role: str, command: list[str]) -> dict[str, Any]:
        p: dict[str, Any] = {"securityContext": pod_security, "enableServiceLinks": False,
                             "containers": [container(role, command)],
                             "volumes": [pvfs2tab, {"name": "tmp", "emptyDir": {}}]}
        if node_selector:
            p["nodeSelector"] = dict(node_selector)
        if tolerations:
            p["tolerations"] = [t.as_k8s() for t in tolerations]
        if role == "worker" and g.nodes > 1:
            # grid.nodes stands for client nodes: spread the workers where the cluster allows it.
            p["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {CALIBRATION_LABEL: owner.name, RUN_LABEL: str(run),
                                                      JOB_LABEL: str(job.index)}}}}]}}
        return {"metadata": {"labels": pod_labels}, "spec": p}

    ranks = g.nodes * g.ranks_per_node
    return {
        "apiVersion": MPIJOB_API, "kind": "MPIJob",
        "metadata": object_metadata(owner, name, labels(owner.name, "probe", {RUN_LABEL: str(run),
                                                                              JOB_LABEL: str(job.index)})),
        "spec": {
            "slotsPerWorker": g.ranks_per_node,
            "mpiImplementation": "MPICH",
            # Hydra waits forever for a proxy whose ssh failed: start only once every worker runs sshd.
            "launcherCreationPolicy": "WaitForWorkersReady",
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0,
                          "activeDeadlineSeconds": spec.timeout_seconds},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never",
                             "template": pod("launcher", ["sh", "-c", launcher_script(job, ranks)])},
                "Worker": {"replicas": g.nodes, "restartPolicy": "Never",
                           "template": pod("worker", ["sh", "-c", f"{_check('worker')}; exec {SSHD}"])},
            },
        },
    }


def measurements_configmap(owner: Owner, run: int, run_for: str, plan_digest: str, data: dict[str, str]
                           ) -> dict[str, Any]:
    """The run's raw measurements: one compact `pfsprobe/1` document per invocation key, and `jobs.json`
    (which MPIJob, by UID, delivered each job's documents). Its annotations say which run it holds."""
    meta = object_metadata(owner, naming.measurements_configmap(owner.name), labels(owner.name, "measurements"),
                           {RUN_ANNOTATION: str(run), RUN_FOR_ANNOTATION: run_for, PLAN_ANNOTATION: plan_digest})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def params_configmap(owner: Owner, name: str, params_json: str, fit_json: str) -> dict[str, Any]:
    """`params.json` in the `--params` format (what layout planning and the shim config read), and
    `fit.json`, the whole `pfslayout calibrate --json` document (cells and residuals included)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": object_metadata(owner, name, labels(owner.name, "params")),
            "data": {"params.json": params_json, "fit.json": fit_json}}
