"""Helpers and fixtures for real pvfs2-servers on loopback, started from configuration rendered by `pfslayout render`.

Runs when ORANGEFS_PREFIX names an OrangeFS install (with sbin/pvfs2-server); skipped, saying why,
otherwise. Servers run as `nobody` when the tests run as root, bind 127.0.0.1 (the aliases' addresses),
and are stopped by PID.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pfslayout.orangefs.commands import server_args, storage_init_script
from pfslayout.orangefs.fsconf import parse_fs_conf


@dataclass(frozen=True)
class OrangeFS:
    prefix: Path

    def bin(self, name: str) -> str:
        for sub in ("sbin", "bin"):
            path = self.prefix / sub / name
            if path.exists():
                return str(path)
        raise FileNotFoundError(f"{name} not in {self.prefix}/sbin or bin")

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (str(self.prefix / "lib"), env.get("LD_LIBRARY_PATH")) if p)
        env.update(extra)
        return env


@pytest.fixture(scope="session")
def orangefs() -> OrangeFS:
    prefix = os.environ.get("ORANGEFS_PREFIX")
    if not prefix:
        # The test command builds OrangeFS itself; it says why when no source could be had.
        why = os.environ.get("PFSLAYOUT_ORANGEFS_UNAVAILABLE")
        pytest.skip(why or "ORANGEFS_PREFIX not set: run e2e/test-all.sh (it builds OrangeFS from source) or "
                    "point it at an OrangeFS install to start real pvfs2-servers on loopback")
    if not (Path(prefix) / "sbin" / "pvfs2-server").exists():
        pytest.skip(f"ORANGEFS_PREFIX={prefix} has no sbin/pvfs2-server: not an OrangeFS server install")
    return OrangeFS(Path(prefix))


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run_cli(*args: str) -> str:
    result = subprocess.run([sys.executable, "-c", "from pfslayout.cli import main; main()", *args],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


@dataclass
class Workdir:
    """A directory the unprivileged server user can write (pytest's tmp_path is 0700 under root)."""

    path: Path
    uid: int | None
    gid: int | None

    def mkdir(self, *parts: str) -> Path:
        p = self.path.joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        if self.uid is not None:
            os.chown(p, self.uid, self.gid or 0)
        return p


@pytest.fixture
def workdir() -> Iterator[Workdir]:
    with make_workdir() as work:
        yield work


@contextmanager
def make_workdir() -> Iterator[Workdir]:
    """A fresh Workdir, removed afterwards (the `workdir` fixture; fixtures of a wider scope use it directly)."""
    path = Path(tempfile.mkdtemp(prefix="pfslayout-ofs-"))
    uid = gid = None
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        uid, gid = nobody.pw_uid, nobody.pw_gid
        os.chmod(path, 0o755)
        os.chown(path, uid, gid)
    try:
        yield Workdir(path, uid, gid)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class ServerGroup:
    """pvfs2-server processes in the foreground (`-d`), one per alias, stopped by PID."""

    ofs: OrangeFS
    work: Workdir
    conf: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def init_storage(self, alias: str, script: str) -> subprocess.CompletedProcess[str]:
        # The exact script the operator puts into the init container, with a literal alias. As the
        # workdir's user (None, None: ours).
        return subprocess.run(["sh", "-c", script],
                              env=self.ofs.env(PATH=f"{self.ofs.prefix}/sbin:{os.environ['PATH']}"),
                              capture_output=True, text=True, timeout=60, check=False,
                              user=self.work.uid, group=self.work.gid)

    def start(self, alias: str, argv: list[str], port: int) -> None:
        log = open(self.work.path / f"{alias}.out", "ab")  # noqa: SIM115 - closed in stop()
        argv = [self.ofs.bin(argv[0]), *argv[1:]]
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.ofs.env(),
                                start_new_session=True, user=self.work.uid, group=self.work.gid)
        log.close()
        self.procs[alias] = proc
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"{alias} exited with {proc.returncode}: {self.output(alias)}{_null_hint()}")
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.2)
        raise AssertionError(f"{alias} did not listen on 127.0.0.1:{port} within 30 s: {self.output(alias)}")

    def output(self, alias: str) -> str:
        path = self.work.path / f"{alias}.out"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        for alias, proc in list(self.procs.items()):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            del self.procs[alias]


def _null_hint() -> str:
    """Why an unprivileged pvfs2-server cannot open its LogFile /dev/null (fsconf.DEFAULT_LOG_FILE): once on
    this machine /dev/null was left mode 000 by something outside the repository, and every loopback server
    failed with "error opening log file /dev/null"."""
    mode = stat.S_IMODE(os.stat("/dev/null").st_mode)
    return "" if mode & 0o666 == 0o666 else (f"\n/dev/null is mode {mode:03o} on this machine, so the servers "
                                             "(not root) cannot open their log: restore it with chmod 666 /dev/null")


@pytest.fixture
def servers(orangefs: OrangeFS, workdir: Workdir) -> Iterator[ServerGroup]:
    with server_group(orangefs, workdir) as group:
        yield group


@contextmanager
def server_group(ofs: OrangeFS, work: Workdir) -> Iterator[ServerGroup]:
    """The servers of `work` (none started yet), every one started stopped afterwards."""
    group = ServerGroup(ofs, work, work.path / "fs.conf")
    try:
        yield group
    finally:
        group.stop_all()


MOUNT = "/mnt/pfslayout-lb"


def render(servers: ServerGroup, ports: list[int], *extra: str) -> dict[str, Any]:
    """Render fs.conf and pvfs2tab through the CLI, exactly as a user would."""
    args = ["--name", "lb", "--namespace", "tests", "--servers", str(len(ports)),
            "--storage-root", str(servers.work.path / "storage"), "--mount-path", MOUNT, *extra]
    for p in ports:
        args += ["--address", f"127.0.0.1:{p}"]
    doc: dict[str, Any] = json.loads(run_cli("render", "fs-conf", *args, "--json"))
    servers.conf.write_text(doc["fsConf"])
    (servers.work.path / "pvfs2tab").write_text(doc["pvfs2tab"])
    # The plain-text command prints the same bytes as the JSON's fsConf.
    assert run_cli("render", "fs-conf", *args) == doc["fsConf"]
    return doc


def init_and_start(servers: ServerGroup, doc: dict[str, Any], ports: list[int]) -> list[str]:
    parsed = parse_fs_conf(doc["fsConf"])
    outputs = []
    for entry, _port in zip(doc["servers"], ports):
        alias = entry["alias"]
        opts = parsed.server_options[alias]
        script = storage_init_script(str(servers.conf), opts["MetadataStorageSpace"], opts["DataStorageSpace"], alias)
        result = servers.init_storage(alias, script)
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    for entry, port in zip(doc["servers"], ports):
        servers.start(entry["alias"], server_args(str(servers.conf), entry["alias"]), port)
    return outputs


def tool(orangefs: OrangeFS, servers: ServerGroup, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([orangefs.bin(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60,
                          check=False, env=orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab")))


def ping(orangefs: OrangeFS, servers: ServerGroup, fs_id: int) -> None:
    result = tool(orangefs, servers, "pvfs2-ping", "-m", MOUNT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "appears to be correctly configured" in result.stdout
    assert f"all servers understand fs_id {fs_id}" in result.stdout
    assert "root handle is owned by exactly one server" in result.stdout


def datafiles(orangefs: OrangeFS, servers: ServerGroup, path: str) -> int:
    result = tool(orangefs, servers, "pvfs2-viewdist", "-f", path)
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("Number of datafiles/servers"))
    return int(line.split("=")[1])


@contextmanager
def running_servers(ofs: OrangeFS, count: int) -> Iterator[ServerGroup]:
    """`count` servers rendered, initialised and started in a fresh Workdir, stopped and removed afterwards
    (for fixtures of a wider scope than `servers`)."""
    with make_workdir() as work, server_group(ofs, work) as group:
        ports = free_ports(count)
        init_and_start(group, render(group, ports), ports)
        yield group
