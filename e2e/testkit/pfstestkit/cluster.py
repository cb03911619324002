"""The test cluster a session shares: `Cluster` (kubectl, helm, waits, RBAC-limited kubeconfigs) and
joining or leaving the cluster that sessions sharing one state directory use together — the building
blocks of the end-to-end tier's fixtures (e2e/tests/conftest.py) and of the cluster benchmarks."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from pfstestkit import CLUSTER_SH, STATE_DIR
from pfstestkit.node_audit import NodeAudit

UP_TIMEOUT_S = int(os.environ.get("PFSLAYOUT_E2E_UP_TIMEOUT_S", "1800"))

T = TypeVar("T")


def cluster_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `e2e/harness/cluster.sh env` describes, applied to `base` (default: this process's)."""
    env = dict(os.environ if base is None else base)
    out = subprocess.run(
        ["bash", "-c", f'eval "$({shlex.quote(str(CLUSTER_SH))} env)" && env -0'],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def poll_delays(interval: float, ceiling: float = 1.0, factor: float = 1.5) -> Iterator[float]:
    """The pauses of a wait: `interval` first, then each 1.5 times the last up to `ceiling` (or `interval`
    when that is longer). A short wait still sees its first answers within a second; a long one spawns a
    third of the probes it did at a fixed 0.25 s, at most `ceiling` late."""
    top = max(interval, ceiling)
    delay = interval
    while True:
        yield delay
        delay = min(delay * factor, top)


@dataclass
class Cluster:
    """A running test cluster and the tools to drive it."""

    kubeconfig: Path
    kubectl_path: str
    helm_path: str
    env: dict[str, str]
    state_dir: Path
    started_here: bool
    mode: str = "local"  # "local" (control plane + kwok) or "kind"
    _tmp: Path = field(repr=False, default=Path("."))
    # What the real node's containers ran with, recorded all session (node_audit.py); None without one.
    audit: NodeAudit | None = field(repr=False, default=None)

    @property
    def kwok(self) -> bool:
        """Pods are played by kwok (no container runs) rather than run by kind's kubelets."""
        return self.mode == "local"

    def port_base(self) -> int:
        """First of the cluster's ten ports (docs/test-cluster.md); base+8/+9 are kept free for the
        operator run as a local process (liveness, metrics)."""
        text = (self.state_dir / "cluster.env").read_text()
        return int(re.search(r"^PORT_BASE=(\d+)", text, re.M).group(1))  # type: ignore[union-attr]

    def run(self, *argv: str, check: bool = True, input: str | None = None,
            timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(argv), env=env or self.env, input=input, capture_output=True,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    def kubectl(self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self.run(self.kubectl_path, "--kubeconfig", str(kubeconfig or self.kubeconfig),
                        "--request-timeout=30s", *args, check=check, input=input, timeout=timeout)

    def kubectl_json(self, *args: str, kubeconfig: Path | None = None) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json", kubeconfig=kubeconfig).stdout)

    def apply(self, manifest: dict[str, Any] | list[dict[str, Any]] | str, namespace: str | None = None) -> None:
        text = manifest if isinstance(manifest, str) else yaml.safe_dump_all(
            manifest if isinstance(manifest, list) else [manifest])
        ns = ["-n", namespace] if namespace else []
        self.kubectl("apply", *ns, "-f", "-", input=text)

    def helm(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self.run(self.helm_path, "--kubeconfig", str(self.kubeconfig), *args, check=check,
                        timeout=timeout)

    def wait_until(self, probe: Callable[[], T | None], what: str, timeout: float = 60,
                   interval: float = 0.25) -> T:
        """Polls `probe` until it returns something truthy; fails naming `what` after `timeout`. The
        pauses grow from `interval` (poll_delays): most probes are a kubectl process (≈ 90 ms of CPU
        each; 3,176 of them in one run of the e2e lanes, which are CPU-bound)."""
        deadline = time.monotonic() + timeout
        last: T | None = None
        delays = poll_delays(interval)
        while time.monotonic() < deadline:
            last = probe()
            if last:
                return last
            time.sleep(max(0.0, min(next(delays), deadline - time.monotonic())))
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")

    def can_i(self, verb: str, resource: str, *, namespace: str | None = None,
              service_account: str | None = None) -> bool:
        """`kubectl auth can-i`, optionally impersonating `namespace/service_account`."""
        args = ["auth", "can-i", verb, resource]
        if namespace:
            args += ["-n", namespace]
        if service_account:
            args += [f"--as=system:serviceaccount:{service_account}"]
        proc = self.kubectl(*args, check=False)
        if proc.stdout.strip() not in ("yes", "no"):
            raise AssertionError(f"kubectl auth can-i: {proc.stdout}{proc.stderr}")
        return proc.stdout.strip() == "yes"

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path | None = None,
                                   duration_s: int = 3600) -> Path:
        """A kubeconfig that authenticates as ServiceAccount `namespace/name` with a bound token from the
        TokenRequest API, so whatever uses it has exactly that account's RBAC (no admin fallback)."""
        token = self.kubectl("create", "token", name, "-n", namespace,
                             f"--duration={duration_s}s").stdout.strip()
        admin = yaml.safe_load(self.kubeconfig.read_text())
        cluster = admin["clusters"][0]["cluster"]
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {
                "server": cluster["server"],
                "certificate-authority-data": cluster["certificate-authority-data"]}}],
            "users": [{"name": f"{namespace}-{name}", "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {
                "cluster": "e2e", "user": f"{namespace}-{name}", "namespace": namespace}}],
            "current-context": "e2e",
        }
        if path is None:
            path = self._tmp / f"sa-{namespace}-{name}-{uuid.uuid4().hex[:6]}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def ca_cert_pem(self) -> bytes:
        admin = yaml.safe_load(self.kubeconfig.read_text())
        return base64.b64decode(admin["clusters"][0]["cluster"]["certificate-authority-data"])



def unavailable_reason() -> str | None:
    """Why the cluster cannot be had here, or None when it can."""
    if shutil.which("go"):
        return None
    script = f'eval "$({shlex.quote(str(CLUSTER_SH))} env)" && test -x "$KUBECTL" && test -x "$HELM"'
    probe = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60)
    if probe.returncode == 0:
        return None
    return "no Go toolchain and no cached cluster binaries: e2e/harness/cluster.sh build needs Go >= 1.26"


def cluster_running() -> bool:
    return subprocess.run([str(CLUSTER_SH), "status"], capture_output=True, timeout=60).returncode == 0


def cluster_state_dir() -> Path:
    return Path(os.environ.get("PFSLAYOUT_E2E_STATE") or STATE_DIR)


def cluster_mode(state: Path | None = None) -> str | None:
    """Which cluster a state directory stands for, "local" or "kind": PFSLAYOUT_E2E_MODE when set (what
    cluster.sh is asked for; its `up` refuses a state directory of the other mode), else what `up` recorded
    in the directory's `mode` file; None when neither says (cluster.sh then picks kind where a container
    engine answers)."""
    if os.environ.get("PFSLAYOUT_E2E_MODE"):
        return os.environ["PFSLAYOUT_E2E_MODE"]
    mode_file = (state or cluster_state_dir()) / "mode"
    return mode_file.read_text().strip() if mode_file.exists() else None


def proc_start(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return None if fields[0] == "Z" else fields[19]  # a zombie has exited


@contextmanager
def users_lock(state: Path, timeout_s: float = UP_TIMEOUT_S) -> Iterator[None]:
    """Serialises the sessions sharing one cluster around joining and leaving it."""
    state.mkdir(parents=True, exist_ok=True)
    with open(state / ".users.lock", "w") as lock:  # `up` keeps the state directory's dot-files
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"timed out waiting for {lock.name}") from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def live_users(users: Path) -> list[Path]:
    live = []
    for entry in users.glob("*"):
        pid, _, start = entry.name.partition("-")
        if pid.isdigit() and proc_start(int(pid)) == start:
            live.append(entry)
        else:
            entry.unlink(missing_ok=True)  # a session that died without its teardown
    return live


def pod_labels(c: Cluster, namespace: str, pod: str) -> dict[str, str] | None:
    proc = c.kubectl("get", "pod", pod, "-n", namespace, "-o", "json", check=False)
    return (json.loads(proc.stdout)["metadata"].get("labels") or {}) if proc.returncode == 0 else None
