"""`e2e/harness/cluster.sh down` leaves nothing of the real node behind: no process, no mount below its state
or containerd's root, no kubepods cgroup, no bridge, no KUBE-* or project iptables chain, every sysctl
kubelet and the node changed restored. Runs last in the session (conftest moves `stops_cluster` tests
there) because it stops the shared cluster; it starts it again afterwards for whoever else uses it."""

from __future__ import annotations

import subprocess

import pytest

from pfstestkit import CLUSTER_SH

pytestmark = [pytest.mark.stops_cluster, pytest.mark.local_cluster]


def test_down_leaves_nothing_of_the_real_node_behind(cluster) -> None:  # noqa: ANN001
    recorded = (cluster.state_dir / "cluster.env").read_text()
    if "REAL_NODE=1" not in recorded:
        pytest.skip("this cluster was started without a real node (PFSLAYOUT_E2E_REAL_NODE=0)")
    def run(cmd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLUSTER_SH, cmd], capture_output=True, text=True, timeout=timeout, env=cluster.env)
    # The node ran something: pods were started on it earlier in the session, or at least the node exists.
    before = run("leftovers", 60).stdout
    assert "process: kubelet" in before and "link: " in before, f"the real node is not running:\n{before}"
    # `up` empties the state directory but its dot-files: keep the session fixture's note that it
    # started this cluster, so the session still stops it at the end.
    started_by_fixture = (cluster.state_dir / "fixture-started").exists()
    try:
        down = run("down", 300)
        assert down.returncode == 0, down.stderr
        left = run("leftovers", 60)
        assert left.stdout.strip() == "", f"left behind by down:\n{left.stdout}"
        procs = subprocess.run(["pgrep", "-af", str(cluster.state_dir)], capture_output=True, text=True).stdout
        assert procs.strip() == "", f"processes still naming the state directory:\n{procs}"
    finally:
        up = run("up", 900)
        assert up.returncode == 0, up.stderr[-3000:]
        if started_by_fixture:
            (cluster.state_dir / "fixture-started").touch()
