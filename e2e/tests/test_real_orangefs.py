"""OrangeFS on real pods: the operator runs in-cluster from the chart (its image, its ServiceAccount, its
RBAC) on the real node, every OrangeFSCluster example in policies/ becomes real `pvfs2-server` pods from
the operator's own manifests, the client toolbox talks to them (`pvfs2-ping`, a byte-identical round
trip, a layout hint that `pvfs2-viewdist` shows), `helm test` passes for real and fails with the operator
down, and a real MPIJob (the MPI Operator's launcher and workers over ssh, the project's MPI image) runs
IOR through ROMIO's `pvfs2:` driver on two worker pods with IOR checking every byte it wrote."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslayout.images import DEFAULT_ORANGEFS_IMAGE
from pfstestkit import REPO
from pfstestkit.crd_release import RELEASE, RELEASE_NS, chart_source
from pfstestkit.ior import ior_mpijob, ior_summary
from pfstestkit.kinds import MOUNT, OFS
from pfstestkit.ofs_pods import (
    datafiles,
    deployment_pods,
    pod_ready,
    sh,
    toolbox,
    wait_ofs_ready,
)
from pfstestkit.real import assert_real_pods, place, pushed_images


def example_clusters() -> list[Path]:
    return sorted(p for p in (REPO / "policies").glob("*.yaml")
                  if any(d and d.get("kind") == "OrangeFSCluster" for d in yaml.safe_load_all(p.read_text())))


def for_real_node(doc: dict[str, Any], mode: str, namespace: str) -> dict[str, Any]:
    """The example as a user would apply it, placed on the real node, cleaning up after itself."""
    doc = place(doc, mode)
    spec = doc["spec"]
    # Delete: the test's servers leave nothing on the node (hostPath directories are wiped by the
    # operator's Jobs, claims removed with the StatefulSet).
    spec["reclaimPolicy"] = "Delete"
    # Calibration has its own tests (test_real_calibration.py); here it would only add probe jobs.
    spec.setdefault("calibration", {})["auto"] = False
    # Beside the example's hostPath, one directory per test namespace: the demo keeps its data at the
    # example's path (Retain), and a server finding another file system's storage (another FS ID) refuses
    # to start — as every server did in CI behind the directories a killed run had left at one shared
    # sibling path.
    host = (spec.get("storage") or {}).get("hostPath")
    if host:
        host["path"] = f"{host['path'].rstrip('/')}-e2e/{namespace}"
    return doc


@pytest.mark.parametrize("example", example_clusters(), ids=lambda p: p.stem)
def test_example_runs_real_orangefs_servers(cluster, incluster_operator, namespace: str,  # noqa: ANN001
                                            example: Path) -> None:
    doc = for_real_node(next(d for d in yaml.safe_load_all(example.read_text())
                             if d and d.get("kind") == "OrangeFSCluster"), cluster.mode, namespace)
    name, servers = doc["metadata"]["name"], int(doc["spec"]["servers"]["count"])
    host_root = Path((doc["spec"]["storage"].get("hostPath") or {}).get("path") or "/nonexistent")
    host_root_existed = host_root.exists()
    cluster.apply(doc, namespace=namespace)
    wait_ofs_ready(cluster, namespace, name, servers)
    server_pods = deployment_pods(cluster, namespace, f"app.kubernetes.io/instance={name},"
                                  "app.kubernetes.io/component=server")
    assert len(server_pods) == servers
    assert_real_pods(cluster, server_pods)
    # The image the servers run is the one `up` pushed to the test cluster's registry, pulled from there
    # by the real node (the registry's own tests: test_real_registry.py).
    orangefs = pushed_images(cluster.state_dir).get(f"docker.io/{DEFAULT_ORANGEFS_IMAGE}", "")
    for pod in server_pods:
        state = pod["status"]["containerStatuses"][0]
        assert state["ready"] and "running" in state["state"], json.dumps(state)
        if orangefs and pod["spec"]["containers"][0]["image"] == DEFAULT_ORANGEFS_IMAGE:
            assert state["imageID"] == f"docker.io/pfslayout/orangefs@{orangefs.split('@')[1]}", (state, orangefs)
    tool = toolbox(cluster, namespace, name)
    assert_real_pods(cluster, [cluster.kubectl_json("get", "pod", tool, "-n", namespace)])

    # Every server answers and agrees on the file system: output of the real client library.
    ping = sh(cluster, namespace, tool, f"pvfs2-ping -m {MOUNT}")
    assert "all servers understand fs_id" in ping and "root handle is owned by exactly one server" in ping, ping
    for pod in server_pods:
        assert pod["metadata"]["name"] in ping, f"{pod['metadata']['name']} missing from pvfs2-ping:\n{ping}"

    # A round trip through the servers: 3 MiB of random bytes in, the same bytes out.
    data = os.urandom(3 * 1024 * 1024)
    want = hashlib.sha256(data).hexdigest()
    out = sh(cluster, namespace, tool,
             "set -e; cd /tmp; base64 -d > in.bin; "
             f"pvfs2-cp in.bin {MOUNT}/roundtrip.bin; pvfs2-cp {MOUNT}/roundtrip.bin out.bin; "
             f"sha256sum out.bin; pvfs2-viewdist -f {MOUNT}/roundtrip.bin; rm -f in.bin out.bin",
             stdin=base64.b64encode(data).decode(), timeout=300)
    assert out.split()[0] == want, f"read back differs from what was written:\n{out}"
    # The root directory has no hint: a new file spreads over every server.
    assert datafiles(out) == servers, out

    # A layout hint set through the toolbox shapes the next file created below it.
    out = sh(cluster, namespace, tool,
             f"set -e; pvfs2-mkdir {MOUNT}/hinted; "
             f"pvfs2-xattr -s -k user.pvfs2.num_dfiles -v 1 {MOUNT}/hinted; "
             f"pvfs2-xattr -t -k user.pvfs2.num_dfiles {MOUNT}/hinted; "
             f"pvfs2-touch {MOUNT}/hinted/one; pvfs2-viewdist -f {MOUNT}/hinted/one")
    assert re.search(r'user\.pvfs2\.num_dfiles"\s+Value : "1"', out), out
    assert datafiles(out) == 1, out

    # Where the servers kept their data on this machine's node (local mode: the test runs beside it).
    storage = doc["spec"]["storage"]
    host_dirs = [Path(storage["hostPath"]["path"]) / p["metadata"]["name"] for p in server_pods] \
        if storage["type"] == "hostPath" else []
    claim_dirs = [Path(pv["spec"]["hostPath"]["path"]) for pv in cluster.kubectl_json("get", "pv")["items"]
                  if (pv["spec"].get("claimRef") or {}).get("namespace") == namespace and pv["spec"].get("hostPath")]
    if cluster.mode == "local":
        assert all(d.is_dir() for d in host_dirs + claim_dirs), host_dirs + claim_dirs

    cluster.kubectl("delete", OFS, name, "-n", namespace, "--wait=true", "--timeout=180s", timeout=200)
    cluster.wait_until(lambda: not deployment_pods(cluster, namespace, f"app.kubernetes.io/instance={name}"),
                       f"the pods of {namespace}/{name} to be gone", timeout=180, interval=1)
    if cluster.mode == "local":
        # reclaimPolicy: Delete on hostPath: the operator's wipe Jobs removed each server's directory.
        cluster.wait_until(lambda: not any(d.exists() for d in host_dirs),
                           f"the operator to wipe {[str(d) for d in host_dirs]}", timeout=120, interval=1)
        # The test cluster's provisioner (kwok's Stages) deletes PersistentVolumes, never their data.
        for d in claim_dirs:
            shutil.rmtree(d, ignore_errors=True)
        if host_dirs and not host_root_existed:
            host_root.rmdir()  # the kubelet created it (DirectoryOrCreate); empty once the wipe is done
            with contextlib.suppress(OSError):  # the lanes' sibling tests may still use the parent
                host_root.parent.rmdir()


def test_helm_test_runs_for_real_and_fails_with_the_operator_down(cluster, incluster_operator) -> None:  # noqa: ANN001
    passed = cluster.helm("test", RELEASE, "-n", RELEASE_NS, "--logs", "--timeout", "180s", timeout=240)
    # The test pod printed what its own HTTP request got back from the operator.
    assert re.search(r"/healthz 200", passed.stdout), passed.stdout
    test_pod = f"{RELEASE}-test-health"
    # Against an operator that is down, a few attempts prove the failure as well as the default minute.
    cluster.helm("upgrade", RELEASE, *chart_source(cluster), "-n", RELEASE_NS, "--reuse-values",
                 "--set", "tests.attempts=3",
                 timeout=240)
    cluster.kubectl("scale", "deployment", RELEASE, "-n", RELEASE_NS, "--replicas=0")
    try:
        cluster.wait_until(lambda: not deployment_pods(cluster, RELEASE_NS, "app.kubernetes.io/component=operator"),
                           "the operator pod to be gone", timeout=120, interval=1)
        failed = cluster.helm("test", RELEASE, "-n", RELEASE_NS, "--timeout", "240s", check=False, timeout=300)
        assert failed.returncode != 0, f"helm test passed with the operator down:\n{failed.stdout}"
        pod = cluster.kubectl_json("get", "pod", test_pod, "-n", RELEASE_NS)
        assert_real_pods(cluster, [pod])
        assert pod["status"]["phase"] == "Failed"
        log = cluster.kubectl("logs", test_pod, "-n", RELEASE_NS).stdout
        assert "Connection refused" in log or "timed out" in log or "No route" in log, log
    finally:
        cluster.kubectl("scale", "deployment", RELEASE, "-n", RELEASE_NS, "--replicas=1")
        cluster.wait_until(lambda: [p for p in deployment_pods(cluster, RELEASE_NS,
                                                               "app.kubernetes.io/component=operator") if pod_ready(p)],
                           "the operator back", timeout=180, interval=1)


def test_mpijob_runs_mpi_io_over_pvfs2_on_two_worker_pods(cluster, incluster_operator, namespace: str) -> None:  # noqa: ANN001
    ofs = yaml.safe_load((REPO / "policies" / "orangefs-small.yaml").read_text())
    ofs = for_real_node(ofs, cluster.mode, namespace)
    cluster.apply(ofs, namespace=namespace)
    wait_ofs_ready(cluster, namespace, ofs["metadata"]["name"], int(ofs["spec"]["servers"]["count"]))
    tool = toolbox(cluster, namespace, ofs["metadata"]["name"])
    sh(cluster, namespace, tool, f"pvfs2-mkdir {MOUNT}/ior")

    workers, ranks = 2, 4
    job = ior_mpijob("ior", ofs["metadata"]["name"], workers, ranks, cluster.mode)
    cluster.apply(job, namespace=namespace)

    def finished() -> str | None:
        obj = cluster.kubectl_json("get", "mpijob", "ior", "-n", namespace)
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        if conds.get("Failed", {}).get("status") == "True":
            logs = cluster.kubectl("logs", "-n", namespace, "job/ior-launcher", check=False)
            raise AssertionError(f"MPIJob failed: {conds['Failed'].get('message')}\n{logs.stdout}{logs.stderr}")
        return "done" if conds.get("Succeeded", {}).get("status") == "True" else None
    cluster.wait_until(finished, "the MPIJob to succeed", timeout=600, interval=2)

    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "training.kubeflow.org/job-name=ior")["items"]
    roles = sorted(p["metadata"]["labels"].get("training.kubeflow.org/job-role") for p in pods)
    assert roles.count("worker") == workers and "launcher" in roles, roles
    assert_real_pods(cluster, pods)
    log = cluster.kubectl("logs", "-n", namespace, "job/ior-launcher").stdout
    # Ranks ran on both worker pods (hostnames only the real pods have), two each.
    for i in range(workers):
        assert re.search(rf"^\s*{ranks // workers}\s+ior-worker-{i}\s*$", log, re.M), log
    # IOR's MPIIO backend statfs()es the path with POSIX, which knows no `pvfs2:` prefix: it warns and goes
    # on. Nothing else may be warned about.
    warnings = re.findall(r"WARNING: [^\n]*", log)
    assert all("statfs" in w for w in warnings), warnings
    summary = ior_summary(log)
    assert set(summary) == {"write", "read"}, log
    for row in summary.values():
        assert row["API"] == "MPIIO" and int(row["#Tasks"]) == ranks and int(row["tPN"]) == ranks // workers, row
        assert float(row["aggs(MiB)"]) == ranks * 4.0 and float(row["Mean(MiB)"]) > 0, row
    # IOR exits with its error count, so a data mismatch would already have failed the job; say so anyway.
    assert "Incorrect data" not in log, log
    # IOR's own checks (-W, -R) compared every byte; the file on OrangeFS has the size it wrote and
    # is spread over the servers by the default distribution.
    out = sh(cluster, namespace, tool, f"pvfs2-ls -l {MOUNT}/ior; pvfs2-viewdist -f {MOUNT}/ior/shared.dat")
    size = ranks * 4 * 1024 * 1024
    assert re.search(rf"\s{size}\s.*shared\.dat", out), out
    assert datafiles(out) == int(ofs["spec"]["servers"]["count"]), out
    cluster.kubectl("delete", "mpijob", "ior", "-n", namespace, "--wait=false")
