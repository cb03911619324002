"""CostCalibrations on the test cluster: their status, and a run waited for until it is over (the real-pod
tiers: e2e and multinode)."""

from __future__ import annotations

from typing import Any

from pfstestkit.cluster import Cluster
from pfstestkit.mpijobs import stalled
from pfstestkit.ofs_pods import operator_log

CC = "costcalibrations.pfslayout.io"


def cc_status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = cluster.kubectl_json("get", CC, name, "-n", ns).get("status") or {}
    return status


def ready(status: dict[str, Any]) -> dict[str, Any]:
    """The Ready condition ({} when there is none yet)."""
    return next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})


def wait_terminal(cluster: Cluster, ns: str, name: str, run: int, timeout: float = 600) -> dict[str, Any]:
    """The status once run `run` has Succeeded or Failed; on timeout, what its unfinished probe jobs say."""
    def probe() -> dict[str, Any] | None:
        st = cc_status(cluster, ns, name)
        return st if st.get("run", 0) >= run and st.get("phase") in ("Succeeded", "Failed") else None
    try:
        done: dict[str, Any] = cluster.wait_until(probe, f"{ns}/{name} run {run} to finish", timeout=timeout,
                                                  interval=2)
        return done
    except AssertionError as err:
        raise AssertionError(f"{err}\n{unfinished(cluster, ns, name)}\noperator log:\n{operator_log(cluster)}"
                             ) from None


def unfinished(cluster: Cluster, ns: str, name: str) -> str:
    """What a calibration that did not finish left to read: its status and, since a probe job that never
    finishes (a launcher Running for the whole wait, 2026-11-29) is explained by its own pods, each of its
    probe MPIJobs' launcher log and processes (mpijobs.stalled)."""
    jobs = cluster.kubectl("get", "mpijobs.kubeflow.org", "-n", ns, "-l", f"pfslayout.io/calibration={name}",
                           "-o", "name", check=False).stdout.split()
    stuck = "\n".join(stalled(cluster, ns, job.rpartition("/")[2]) for job in jobs)
    return f"status: {cc_status(cluster, ns, name)}\n{stuck}"
