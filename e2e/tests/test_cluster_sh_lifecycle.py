"""`e2e/harness/cluster.sh` lifecycle on a second, private cluster (own state directory and ports), so the
session's shared cluster is never touched: `up` from nothing, `up` again returns at once, `env`,
`status`, and `down` leaves no process behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from pfstestkit import CLUSTER_SH

PORTS = 15  # lib.sh PORT_COUNT


def _free_port_base() -> int:
    for base in range(27100, 32000, 16):
        socks = []
        try:
            for port in range(base, base + PORTS):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError(f"no free range of {PORTS} ports on 127.0.0.1")


def _pids(state: Path) -> dict[str, tuple[int, str]]:
    """component -> (pid, start time in clock ticks), as the harness records them: the start time tells the
    process from an unrelated one that got the same PID later (pid_max is 32768 on some machines, and a
    cold run starts tens of thousands of processes)."""
    out = {}
    for f in sorted((state / "pids").glob("*.pid")):
        pid, start = f.read_text().split()[:2]
        out[f.stem] = (int(pid), start)
    return out


def _alive(proc: tuple[int, str]) -> bool:
    """Whether the recorded process (pid, start time) still runs; a zombie counts as gone."""
    pid, start = proc
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z" and fields[19] == start


def test_up_is_idempotent_and_down_leaves_nothing(cluster: object, tmp_path: Path) -> None:
    # `cluster` first: the binaries are built and the shared cluster's ports are taken before ours.
    state = tmp_path / "state"
    # A second cluster on the machine: the one real node belongs to the shared cluster.
    env = dict(os.environ, PFSLAYOUT_E2E_STATE=str(state), PFSLAYOUT_E2E_PORT_BASE=str(_free_port_base()),
               PFSLAYOUT_E2E_MODE="local", PFSLAYOUT_E2E_REAL_NODE="0")

    def sh(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(CLUSTER_SH), *args], env=env, capture_output=True, text=True, timeout=timeout)

    up = sh("up")
    try:
        assert up.returncode == 0, up.stderr
        pids = _pids(state)
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                             "kwok", "mpi-operator"}
        assert all(_alive(p) for p in pids.values()), pids

        t0 = time.monotonic()
        again = sh("up", timeout=60)
        assert again.returncode == 0 and "already running" in again.stderr, again.stderr
        assert time.monotonic() - t0 < 20
        assert _pids(state) == pids  # nothing restarted

        status = sh("status", timeout=60)
        assert status.returncode == 0 and "ready" in status.stdout, status.stdout
        assert again.stdout.strip() == "already-running" and up.stdout.strip().endswith("started")
        exports = sh("env", timeout=60).stdout
        assert f"export KUBECONFIG={state}/kubeconfig" in exports
        for var in ("KUBECTL=", "HELM=", "HELM_CACHE_HOME=", "PATH="):
            assert var in exports
        # Everything listens on loopback only.
        listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=30).stdout
        ours = [line for line in listening.splitlines() if any(f"pid={pid}," in line for pid, _ in pids.values())]
        assert ours, listening
        for line in ours:
            local = line.split()[3]
            assert local.startswith(("127.0.0.1:", "[::1]:", "[::ffff:127.0.0.1]:")), line

        # A half-alive cluster (one process died) is not reported as running, and `up` replaces it
        # whole: the survivors are stopped, everything starts afresh.
        os.kill(pids["kwok"][0], 9)
        deadline = time.monotonic() + 10
        while _alive(pids["kwok"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sh("status", timeout=60).returncode == 3
        redo = sh("up")
        assert redo.returncode == 0 and redo.stdout.strip().endswith("started"), redo.stderr
        assert not [name for name, pid in pids.items() if _alive(pid)]
        pids = _pids(state)
        assert len(pids) == 6 and all(_alive(p) for p in pids.values())
    finally:
        down = sh("down")
    assert down.returncode == 0, down.stderr
    assert not [name for name, pid in pids.items() if _alive(pid)]
    assert not list((state / "pids").glob("*.pid"))
    assert sh("status", timeout=60).returncode == 3


def _sh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLUSTER_SH), *args], env=env, capture_output=True, text=True, timeout=120)


def test_up_refuses_a_taken_port_and_starts_nothing(cluster: object, tmp_path: Path) -> None:
    base = _free_port_base()
    state = tmp_path / "state"
    env = dict(os.environ, PFSLAYOUT_E2E_STATE=str(state), PFSLAYOUT_E2E_PORT_BASE=str(base),
               PFSLAYOUT_E2E_MODE="local", PFSLAYOUT_E2E_REAL_NODE="0")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base + 3))  # the API server's port
        squatter.listen()
        proc = _sh(env, "up")
    assert proc.returncode != 0
    message = proc.stderr.strip().splitlines()[-1]
    assert f"127.0.0.1:{base + 3} is in use" in message and "PFSLAYOUT_E2E_PORT_BASE" in message, proc.stderr
    assert not list(state.glob("pids/*.pid"))


@pytest.mark.local_cluster
@pytest.mark.parametrize("owner", ["none", "live", "gone"])
def test_up_reclaims_only_a_bridge_its_crashed_run_left(cluster: Any, tmp_path: Path, owner: str) -> None:
    """A bridge of the real node's name is taken back only when this harness made it (its alias names the
    cluster's state directory) and that cluster no longer runs -- a crashed run, or CI on a machine
    restored from a snapshot. One made by someone else, or by a cluster that still runs, is named with
    the fix and left alone."""
    if os.geteuid() != 0:
        pytest.skip("creating a bridge needs root")
    # "gone" too: after the reclaim, the session's running real node is what stops this `up` from starting one.
    real_node = cluster.mode == "local" and "REAL_NODE=1" in (cluster.state_dir / "cluster.env").read_text()
    if owner != "none" and not real_node:
        pytest.skip("needs the session's cluster to run a real node on this machine")
    bridge = f"pfslt{os.getpid() % 1000}{owner[0]}"
    env = dict(os.environ, PFSLAYOUT_E2E_STATE=str(tmp_path / "state"), PFSLAYOUT_E2E_PORT_BASE=str(_free_port_base()),
               PFSLAYOUT_E2E_MODE="local", PFSLAYOUT_E2E_REAL_NODE="1", PFSLAYOUT_E2E_BRIDGE=bridge,
               PFSLAYOUT_E2E_NODE_NET="10.251.7")
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    made_by = {"live": str(cluster.state_dir), "gone": str(tmp_path / "crashed-run-state")}.get(owner)
    if made_by:
        subprocess.run(["ip", "link", "set", "dev", bridge, "alias", f"pfslayout-e2e:{made_by}"], check=True)
    try:
        proc = _sh(env, "up")
        # Never started here: the session's real node is the machine's one (a later preflight check says
        # so), or the bridge is refused first.
        assert proc.returncode != 0
        assert not list((tmp_path / "state").glob("pids/*.pid"))
        exists = subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode == 0
        if owner == "gone":
            assert f"reclaiming network device {bridge} left by the cluster in {made_by}" in proc.stderr, proc.stderr
            assert not exists
            return
        message = proc.stderr.strip().splitlines()[-1]
        expected = {"none": f"network device {bridge} already exists and this harness did not make it",
                    "live": f"network device {bridge} belongs to the cluster in {made_by}, which still runs"}[owner]
        assert expected in message, proc.stderr
        assert exists, "a bridge the harness may not take was deleted"
    finally:
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)


@pytest.mark.parametrize(("args", "env_extra", "expected"), [
    (("frobnicate",), {}, "usage: e2e/harness/cluster.sh build|up|down|env|status|leftovers|images"),
    (("status",), {"PFSLAYOUT_E2E_MODE": "docker"}, "PFSLAYOUT_E2E_MODE must be local or kind, not 'docker'"),
    (("build", "kubelet"), {"PFSLAYOUT_E2E_MODE": "local"}, "unknown component 'kubelet'"),
])
def test_bad_arguments_fail_with_one_clear_line(tmp_path: Path, args: tuple[str, ...],
                                                env_extra: dict[str, str], expected: str) -> None:
    env = dict(os.environ, PFSLAYOUT_E2E_STATE=str(tmp_path / "state"), **env_extra)
    proc = _sh(env, *args)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cluster: error: {expected}"), proc.stderr


def test_up_without_an_engine_or_root_says_what_is_missing_in_one_line() -> None:
    """Neither kind (no container engine answers) nor the local cluster (its real node needs root): `up`
    names both and the fixes, in one line, before it builds or starts anything. Played as an unprivileged
    user whose `docker` and `podman` fail, as they do where no engine runs."""
    if os.geteuid() != 0:
        pytest.skip("plays an unprivileged user with setpriv: needs root")
    # Outside pytest's tmp_path (root-only): the unprivileged user runs the fakes and writes state here.
    root = Path(tempfile.mkdtemp(prefix="pfslayout-noengine-"))
    try:
        root.chmod(0o755)
        (root / "bin").mkdir()
        for engine in ("docker", "podman"):
            fake = root / "bin" / engine
            fake.write_text("#!/bin/sh\nexit 125\n")
            fake.chmod(0o755)
        env = dict(os.environ, PATH=f"{root / 'bin'}:/usr/bin:/bin", HOME=str(root),
                   PFSLAYOUT_E2E_STATE=str(root / "state"))
        env.pop("PFSLAYOUT_E2E_MODE", None)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(CLUSTER_SH), "up"],
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "no container engine answers" in lines[0] and "needs root" in lines[0] \
            and "podman" in lines[0], proc.stderr
        assert not (root / "state").exists() or not list((root / "state").rglob("*.pid"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
