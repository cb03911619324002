"""OrangeFS over several real nodes (issue 32, items 3 and 4): the operator spreads an OrangeFSCluster's
servers over distinct nodes and says in status where each runs; a server restarted comes back on the
node that holds its data and every byte written before reads back; an MPIJob whose workers are on three
nodes runs IOR through ROMIO's pvfs2: driver against servers on other nodes; asking for more distinct
nodes than there are leaves a server Pending with a condition naming the field; a CostCalibration probes
from workers on distinct nodes and its fit says how many."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from typing import Any

import pytest

from pfstestkit.calibrations import ready, wait_terminal
from pfstestkit.ior import IOR_BLOCK, ior_mpijob, ior_summary
from pfstestkit.kinds import MOUNT, OFS
from pfstestkit.mpijobs import finished, launcher_log
from pfstestkit.ofs_pods import datafile_servers, datafiles, server_pods, server_selector, sh, toolbox, wait_ofs_ready
from pfstestkit.real import assert_real_pods


def ofs(name: str, servers: int, storage: dict[str, Any], spread: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "servers": {"count": servers, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
        "storage": storage, "reclaimPolicy": "Delete", "calibration": {"auto": False},
        "client": {"replicas": 1},
    }
    if spread:
        spec["servers"]["spread"] = spread
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": name},
            "spec": spec}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


@pytest.mark.parametrize("storage", ["pvc", "hostPath"])
def test_servers_on_distinct_nodes_keep_their_data_and_serve_ior_across_nodes(
        cluster, incluster_operator, namespace: str, storage: str) -> None:  # noqa: ANN001
    """pvc: the claims of the default StorageClass (local-path: a volume bound to its node); hostPath: the
    operator's own PersistentVolume per server, pinned to the node it chose."""
    name, servers = "spread", 3
    volume = {"type": "pvc", "size": "1Gi"} if storage == "pvc" else \
        {"type": "hostPath", "hostPath": {"path": f"/var/lib/pfslayout-e2e/{namespace}"}}
    cluster.apply(ofs(name, servers, volume), namespace=namespace)
    obj = wait_ofs_ready(cluster, namespace, name, servers)
    pods = server_pods(cluster, namespace, name)
    assert_real_pods(cluster, pods)
    where = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    assert len(set(where.values())) == servers, f"servers share nodes: {where}"
    # Auto with three eligible workers is Required; status says where each server runs.
    placement = obj["status"]["placement"]
    assert placement["spread"] == "Required" and placement["eligibleNodes"] >= servers, placement
    assert {s["name"]: s["node"] for s in placement["servers"]} == where, placement
    assert condition(obj, "ServersSpread").get("reason") == "Distinct", condition(obj, "ServersSpread")

    # Bytes in through the client toolbox, spread over the three servers.
    tool = toolbox(cluster, namespace, name)
    data = os.urandom(3 * 1024 * 1024)
    want = hashlib.sha256(data).hexdigest()
    out = sh(cluster, namespace, tool,
             f"set -e; cd /tmp; base64 -d > in.bin; pvfs2-cp in.bin {MOUNT}/kept.bin; rm -f in.bin; "
             f"pvfs2-viewdist -f {MOUNT}/kept.bin", stdin=base64.b64encode(data).decode(), timeout=300)
    assert datafiles(out) == servers, out

    # Every server restarted at once: each comes back on the node holding its claim, and reads back.
    uids = {p["metadata"]["uid"] for p in pods}
    cluster.kubectl("delete", "pods", "-n", namespace, "-l", server_selector(name),
                    "--wait=false")
    cluster.wait_until(lambda: not uids & {p["metadata"]["uid"] for p in server_pods(cluster, namespace, name)},
                       "the restarted server pods", timeout=120, interval=1)
    wait_ofs_ready(cluster, namespace, name, servers)
    again = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in server_pods(cluster, namespace, name)}
    assert again == where, f"servers moved: {where} -> {again}"
    tool = toolbox(cluster, namespace, name)
    out = sh(cluster, namespace, tool,
             f"set -e; cd /tmp; pvfs2-cp {MOUNT}/kept.bin out.bin; sha256sum out.bin; rm -f out.bin", timeout=300)
    assert out.split()[0] == want, f"read back after the restart differs from what was written:\n{out}"

    if storage != "pvc":
        return  # IOR across nodes once: the servers it talks to are the same with either storage
    # IOR from three workers, one per node, against the three servers.
    sh(cluster, namespace, tool, f"pvfs2-mkdir {MOUNT}/ior")
    workers = ranks = 3
    cluster.apply(ior_mpijob("ior", name, workers, ranks, cluster.mode, spread=True), namespace=namespace)

    outcome = finished(cluster, namespace, "ior", timeout=600)
    assert outcome == "Succeeded", f"MPIJob {outcome}:\n{launcher_log(cluster, namespace, 'ior')}"
    job_pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "training.kubeflow.org/job-name=ior")["items"]
    assert_real_pods(cluster, job_pods)
    worker_nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job_pods
                    if p["metadata"]["labels"].get("training.kubeflow.org/job-role") == "worker"}
    assert len(set(worker_nodes.values())) == workers, f"workers share nodes: {worker_nodes}"
    log = cluster.kubectl("logs", "-n", namespace, "job/ior-launcher").stdout
    for i in range(workers):
        assert re.search(rf"^\s*1\s+ior-worker-{i}\s*$", log, re.M), log
    summary = ior_summary(log)
    assert set(summary) == {"write", "read"}, log
    block_mib = int(IOR_BLOCK.rstrip("m"))
    for row in summary.values():
        assert int(row["#Tasks"]) == ranks and float(row["aggs(MiB)"]) == ranks * block_mib, row
    assert "Incorrect data" not in log, log
    out = sh(cluster, namespace, tool, f"pvfs2-viewdist -f {MOUNT}/ior/shared.dat")
    # The shared file lives on all three servers, so each worker wrote to servers on other nodes.
    assert len(set(datafile_servers(out))) == servers, out
    cluster.kubectl("delete", "mpijob", "ior", "-n", namespace, "--wait=false")


def test_required_spread_over_more_servers_than_nodes_says_so(cluster, incluster_operator, namespace: str) -> None:  # noqa: ANN001
    real_workers = [n for n in cluster.kubectl_json("get", "nodes", "-l", "pfslayout.io/hpc-node=true")["items"]
                    if not n["spec"].get("taints")]
    servers = len(real_workers) + 1
    name = "toomany"
    cluster.apply(ofs(name, servers, {"type": "emptyDir", "size": "256Mi"}, spread="Required"), namespace=namespace)

    def told() -> dict[str, Any] | None:
        obj: dict[str, Any] = cluster.kubectl_json("get", OFS, name, "-n", namespace)
        cond = condition(obj, "ServersSpread")
        return obj if cond.get("status") == "False" and cond.get("reason") == "NotEnoughNodes" else None
    obj = cluster.wait_until(told, "the ServersSpread condition NotEnoughNodes", timeout=120, interval=1)
    message = condition(obj, "ServersSpread")["message"]
    assert "servers.spread" in message and str(servers) in message, message

    def split() -> tuple[list[str], list[str]] | None:
        pods = server_pods(cluster, namespace, name)
        running = [p["spec"]["nodeName"] for p in pods if p["status"].get("phase") == "Running"]
        pending = [p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Pending"
                   and not p["spec"].get("nodeName")]
        return (running, pending) if len(running) == servers - 1 and len(pending) == 1 else None
    running, _ = cluster.wait_until(split, f"{servers - 1} servers running and one Pending", timeout=240, interval=1)
    assert len(set(running)) == servers - 1, running
    events = cluster.kubectl("get", "events", "-n", namespace, "--field-selector",
                             f"involvedObject.name={name},type=Warning", "-o", "jsonpath={.items[*].reason}").stdout
    assert "NotEnoughNodes" in events, events


def test_calibration_probes_from_workers_on_distinct_nodes_and_says_how_many(
        cluster, incluster_operator, namespace: str) -> None:  # noqa: ANN001
    """A CostCalibration whose grid stands for three client nodes: its probe MPIJobs' workers land on three
    nodes (the operator's pod anti-affinity), their ranks reach servers on other nodes, and the published
    fit says it measured three client nodes."""
    servers = nodes = 3
    cluster.apply(ofs("probed", servers, {"type": "emptyDir", "size": "256Mi"}), namespace=namespace)
    cc = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "CostCalibration", "metadata": {"name": "probed"},
          "spec": {"clusterRef": {"name": "probed"}, "probeImage": "pfslayout/mpi:dev", "backend": "pvfs2",
                   # the mechanics on a small grid, not the platform's parameters: any fit will do
                   "grid": {"nodes": nodes, "ranksPerNode": 1, "requestSizes": [65536, 1048576],
                            "requestsPerRank": 8, "minBytesPerRank": 1 << 20, "repetitions": 2, "maxConfigs": 8},
                   "fit": {"minRSquared": 0}}}
    cluster.apply(cc, namespace=namespace)
    wait_ofs_ready(cluster, namespace, "probed", servers)

    def workers() -> list[dict[str, Any]] | None:
        pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l",
                                    "pfslayout.io/calibration=probed,training.kubeflow.org/job-role=worker")["items"]
        placed = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        return placed if len(placed) >= nodes else None
    probe_workers = cluster.wait_until(workers, f"{nodes} probe workers placed", timeout=300, interval=1)
    assert_real_pods(cluster, probe_workers)
    by_job: dict[str, set[str]] = {}
    for p in probe_workers:
        by_job.setdefault(p["metadata"]["labels"]["training.kubeflow.org/job-name"], set()).add(p["spec"]["nodeName"])
    assert any(len(n) == nodes for n in by_job.values()), f"a probe job's workers share nodes: {by_job}"

    st = wait_terminal(cluster, namespace, "probed", 1)
    assert st["phase"] == "Succeeded", st
    assert st["fit"]["clientNodes"] == nodes, st["fit"]
    assert ready(st)["reason"] in ("Fitted", "PoorFit"), ready(st)
