"""`e2e/harness/cluster.sh down` on kind leaves nothing behind (issue 32, item 2): no node container, not
kind's network, not the node image loaded into the engine, no host process (registry, kwok, the MPI
Operator) — while the node image's archive stays in the cache for the next `up`. Runs last in its session
(conftest moves `stops_cluster` tests there) because it stops the shared cluster. It starts the cluster
again afterwards, unless the session runs last on it (the test command sets
PFSLAYOUT_E2E_LAST_SESSION=1 and brings kind down right after: starting it again would cost minutes)."""

from __future__ import annotations

import os
import subprocess

import pytest

from pfstestkit import CLUSTER_SH, cache_root

pytestmark = pytest.mark.stops_cluster


def test_down_leaves_nothing_of_the_kind_cluster_behind(cluster) -> None:  # noqa: ANN001
    assert cluster.mode == "kind", "the multinode tier runs on the kind cluster (PFSLAYOUT_E2E_MODE=kind)"

    def run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLUSTER_SH, *args], capture_output=True, text=True, timeout=timeout, env=cluster.env)

    engine = "podman" if cluster.env.get("KIND_EXPERIMENTAL_PROVIDER") == "podman" else "docker"
    nodes = subprocess.run([engine, "ps", "--format", "{{.Names}}"], capture_output=True, text=True,
                           env=cluster.env, timeout=60).stdout.split()
    name = cluster.kubectl("config", "current-context").stdout.strip().removeprefix("kind-")
    ours = [n for n in nodes if n.startswith(f"{name}-")]
    assert len(ours) >= 4, f"the kind cluster {name} is not running: {nodes}"
    started_by_fixture = (cluster.state_dir / "fixture-started").exists()
    last = os.environ.get("PFSLAYOUT_E2E_LAST_SESSION") == "1"
    try:
        down = run("down", timeout=600)
        assert down.returncode == 0, down.stderr[-3000:]
        left = run("leftovers", timeout=120)
        assert left.returncode == 0 and left.stdout.strip() == "", f"left behind by down:\n{left.stdout}{left.stderr}"
        gone = subprocess.run([engine, "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True,
                              env=cluster.env, timeout=60).stdout.split()
        assert not set(ours) & set(gone), gone
        procs = subprocess.run(["pgrep", "-af", str(cluster.state_dir)], capture_output=True, text=True).stdout
        assert procs.strip() == "", f"processes still naming the state directory:\n{procs}"
        # The node image built here stays cached as an archive (a laptop's public image is the engine's).
        if cluster.env.get("KIND_EXPERIMENTAL_PROVIDER") == "podman":
            assert list(cache_root().glob("kind-node-*.tar")), f"no node image archive left in {cache_root()}"
    finally:
        if not last:
            up = run("up", timeout=1200)
            assert up.returncode == 0, up.stderr[-3000:]
            if started_by_fixture:
                (cluster.state_dir / "fixture-started").touch()
