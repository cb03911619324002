"""MPIJobs on the real node: a job of the MPI image, its outcome and its launcher's log."""

from __future__ import annotations

from typing import Any

from pfslayout.images import DEFAULT_MPI_IMAGE
from pfstestkit.cluster import Cluster
from pfstestkit.real import assert_real_pods

SSHD = "exec /usr/sbin/sshd -De -f /home/mpiuser/.sshd_config"


def mpijob(name: str, command: str, labels: dict[str, str], suspend: bool) -> dict[str, Any]:
    """What a user writes: the MPI image, a plain mpiexec; no shim, no pvfs2tab, no preload. The command
    goes in `args`, so the image's entrypoint runs first (docs/images.md): on the launcher it waits for the
    workers' names and gives Hydra the pod's interface (a job that sets `command` replaces it, and its
    Hydra proxies may then fail to resolve the launcher's name — seen in CI)."""
    security = {"runAsUser": 10001, "runAsGroup": 10001, "runAsNonRoot": True,
                "seccompProfile": {"type": "RuntimeDefault"}}

    def pod(role: str, cmd: str) -> dict[str, Any]:
        return {"spec": {"securityContext": security, "enableServiceLinks": False, "containers": [{
            "name": role, "image": DEFAULT_MPI_IMAGE, "imagePullPolicy": "IfNotPresent",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            "args": ["sh", "-c", cmd]}]}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name, "labels": labels},
            "spec": {"slotsPerWorker": 2, "mpiImplementation": "MPICH",
                     "launcherCreationPolicy": "WaitForWorkersReady", "sshAuthMountPath": "/home/mpiuser/.ssh",
                     "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0, "activeDeadlineSeconds": 600,
                                   "suspend": suspend},
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "restartPolicy": "Never",
                                      "template": pod("launcher", f"set -eu\n{command}\n")},
                         "Worker": {"replicas": 2, "restartPolicy": "Never", "template": pod("worker", SSHD)}}}}


def get_job(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    job: dict[str, Any] = cluster.kubectl_json("get", "mpijobs.kubeflow.org", name, "-n", ns)
    return job


def finished(cluster: Cluster, ns: str, name: str, timeout: float = 420) -> str:
    def state() -> str | None:
        for c in (get_job(cluster, ns, name).get("status") or {}).get("conditions") or []:
            if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                return str(c["type"])
        return None
    try:
        got: str = cluster.wait_until(state, f"MPIJob {name} finished", timeout=timeout, interval=3)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{stalled(cluster, ns, name)}") from None
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"training.kubeflow.org/job-name={name}")["items"]
    assert_real_pods(cluster, pods)
    return got


# What runs in a pod, without ps (the MPI image has none): pid and command line of every process.
PROCESSES = ('for p in /proc/[0-9]*; do printf "%s " "${p#/proc/}"; tr "\\0" " " < "$p/cmdline" 2>/dev/null; '
             'echo; done')


def stalled(cluster: Cluster, ns: str, name: str) -> str:
    """What a job that did not finish left to read: its conditions, its pods and Jobs, the namespace's
    Events, the launcher's log and the processes of each of its pods (MPIJobs that never finished with
    lanes side by side left nothing else to go on)."""
    job = cluster.kubectl("get", "mpijobs.kubeflow.org", name, "-n", ns, "-o",
                          "jsonpath={.spec.runPolicy.suspend} {.status.conditions}", check=False)
    pods = cluster.kubectl("get", "pods,jobs", "-n", ns, "-o", "wide", check=False)
    events = cluster.kubectl("get", "events", "-n", ns, "--sort-by=.lastTimestamp", check=False)
    out = (f"MPIJob {name} (suspend, conditions): {job.stdout.strip() or job.stderr.strip()}\n"
           f"pods and jobs:\n{pods.stdout}\nevents (last 40):\n" + "\n".join(events.stdout.splitlines()[-40:]))
    # Every call below unchecked: what explains a timeout must never replace it with an error of its own.
    members = cluster.kubectl("get", "pods", "-n", ns, "-l", f"training.kubeflow.org/job-name={name}", "-o",
                              "jsonpath={range .items[*]}{.metadata.name} {.metadata.labels.training\\.kubeflow\\.org/"
                              "job-role}{\"\\n\"}{end}", check=False).stdout.split("\n")
    for line in filter(None, members):
        pod, _, role = line.partition(" ")
        if role == "launcher":
            log = cluster.kubectl("logs", "-n", ns, pod, "--tail=60", check=False)
            out += f"\nlog of {pod} (last 60 lines):\n{log.stdout or log.stderr}"
        ps = cluster.kubectl("exec", "-n", ns, pod, "--", "sh", "-c", PROCESSES, check=False, timeout=30)
        out += f"\nprocesses of {pod}:\n{ps.stdout or ps.stderr}"
    return out


def launcher_log(cluster: Cluster, ns: str, name: str) -> str:
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"training.kubeflow.org/job-name={name},"
                                "training.kubeflow.org/job-role=launcher")["items"]
    return cluster.kubectl("logs", "-n", ns, pods[0]["metadata"]["name"], check=False).stdout if pods else ""


def spread_workers(job: dict[str, Any]) -> None:
    """Each of the MPIJob's workers on a node of its own (required pod anti-affinity on the hostname, by a
    label naming the job): on kind, ranks on several real nodes."""
    name = job["metadata"]["name"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    worker.setdefault("metadata", {}).setdefault("labels", {})["pfslayout.io/e2e-spread"] = name
    term = {"labelSelector": {"matchLabels": {"pfslayout.io/e2e-spread": name}},
            "topologyKey": "kubernetes.io/hostname"}
    worker.setdefault("spec", {})["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def worker_nodes(cluster: Cluster, ns: str, name: str) -> list[str]:
    """The nodes the MPIJob's worker pods ran on, one entry per worker."""
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", f"training.kubeflow.org/job-name={name},"
                                "training.kubeflow.org/job-role=worker")["items"]
    return sorted(p["spec"].get("nodeName") or "" for p in pods)
