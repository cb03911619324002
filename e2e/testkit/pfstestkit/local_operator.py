"""The one way the e2e tier starts the operator as a local process, and the handle tests use to reach it.

On the local control plane the chart's Deployment is only played by kwok, so the real operator runs on
the host: the chart's command (`kopf run --standalone --all-namespaces -m pfslayout.operator.main`, serving
its lane's namespaces: PFSLAYOUT_WATCH_NAMESPACES, pfstestkit.lanes) with a kubeconfig holding a bound
token of the lane's chart ServiceAccount, so it has exactly the chart's RBAC. Kopf liveness and Prometheus
metrics listen on free loopback ports (sessions sharing one cluster each start their own operator), and its
output goes to a log file the tests print when something fails.

On kind the chart's own Deployment runs the operator image; `Operator` then reaches it through the API
server's service proxy (`proc` is None). The `operator` fixture in conftest.py picks one of the two.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfstestkit.lanes import current

# The entry module the chart runs (pfslayout/operator/main.py).
MODULE = "pfslayout.operator.main"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:  # loopback only
            return resp.status, resp.read().decode()
    except OSError as err:
        return 0, str(err)


@dataclass
class Operator:
    """The operator under test: a local process (local control plane), or the chart's Deployment (kind,
    reached through the API server's service proxy). `proc` is None in-cluster."""

    proc: subprocess.Popen[bytes] | None
    log: Path | None
    health_url: str
    metrics_url: str
    kubeconfig: Path
    cluster: Any = None  # the `cluster` fixture of conftest.py

    def log_tail(self, n: int = 60) -> str:
        if self.log is None:
            lane = current()
            return str(self.cluster.kubectl("logs", "-n", lane.release_ns, f"deployment/{lane.release}",
                                            f"--tail={n}", check=False).stdout)
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def get(self, url: str) -> tuple[int, str]:
        if self.proc is not None:
            return http_get(url)
        out = self.cluster.kubectl("get", "--raw", url, check=False)
        return (200 if out.returncode == 0 else 0), out.stdout or out.stderr


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Settings for the operator processes started inside (local_operator copies os.environ)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)  # Kopf finishes its handlers and exits
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def local_operator(cluster: Any, kubeconfig: Path, log_dir: Path,
                   watch: tuple[str, ...] | None = None, module: str = MODULE) -> Iterator[Operator]:
    """The operator as a local process with `kubeconfig`'s identity, Ready (liveness answering) on entry
    and stopped on exit; serving `watch` (default: the lane's namespaces); `module` is the entry module
    (a released operator's may differ: test_real_upgrade.py)."""
    health, metrics = free_port(), free_port()
    log = log_dir / "kopf.log"
    # No in-cluster hints: the process must use the kubeconfig, never a ServiceAccount of the host.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    lane = current()  # serves the namespaces of the lane that starts it, as that lane's release's account
    env.update(KUBECONFIG=str(kubeconfig), PFSLAYOUT_METRICS_ADDR=f"127.0.0.1:{metrics}", PYTHONUNBUFFERED="1",
               PFSLAYOUT_WATCH_NAMESPACES=",".join(watch or lane.watch), PFSLAYOUT_NAMESPACE_ROLE=lane.namespace_role,
               PFSLAYOUT_SERVICE_ACCOUNT=lane.service_account, PFSLAYOUT_FORBIDDEN_RETRY_SECONDS="5")
    with open(log, "wb") as out:
        # Its own session: a Ctrl-C of pytest reaches the fixture's teardown, which stops it in order.
        proc = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces",
             f"--liveness=http://127.0.0.1:{health}/healthz", "-m", module],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log_dir, start_new_session=True)
    op = Operator(proc, log, f"http://127.0.0.1:{health}/healthz", f"http://127.0.0.1:{metrics}/metrics",
                  kubeconfig, cluster)
    try:
        cluster.wait_until(lambda: proc.poll() is None and http_get(op.health_url)[0] == 200,
                           "the operator's liveness endpoint", timeout=START_TIMEOUT_S, interval=0.5)
        yield op
    finally:
        _stop(proc)


def in_cluster_operator(cluster: Any, kubeconfig: Path) -> Operator:
    """The chart's Deployment, reached through the API server's service proxy."""
    lane = current()
    proxy = f"/api/v1/namespaces/{lane.release_ns}/services/{lane.release}"
    return Operator(None, None, f"{proxy}:health/proxy/healthz", f"{proxy}:metrics/proxy/metrics", kubeconfig,
                    cluster)
