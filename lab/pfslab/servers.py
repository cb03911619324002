"""pvfs2-servers for the lab, one per server namespace, from the project's own rendering: the
``fs.conf`` and ``pvfs2tab`` that ``pfslayout render fs-conf --json`` prints, and the storage-init
script and argv the operator's server pods run (``pfslayout.orangefs.commands``). So the lab measures
the configuration the operator deploys, not a hand-written one.

Storage is a tmpfs mounted for the lab: the emulated cluster measures the network and the servers'
software path, and a virtual disk would only add noise. Servers run as ``nobody`` (as in the loopback
tier), in the foreground, detached from the ``lab`` command; their PIDs are recorded so ``down`` stops
exactly them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from pfslab.net import Endpoint, LabError, in_ns
from pfslab.product import pfslayout_json
from pfslayout.orangefs.commands import server_args, storage_init_script
from pfslayout.orangefs.fsconf import parse_fs_conf

PORT = 3334
FS_NAME = "lab"
MOUNT = "/pfslab"  # the pvfs2tab mount point: a name libpvfs2 resolves, never mounted in the kernel


def render(servers: list[Endpoint], storage: Path) -> dict[str, Any]:
    """The render document (fsConf, pvfs2tab, servers) for servers at the namespaces' addresses. Without
    FileStuffing: a stuffed file stays on one server until it grows, so a file created through directory
    hints would not start with the layout under test (the probe's own files are placed explicitly)."""
    # --no-sync-data: the lab's data is throwaway and its recorded results (docs/results.md) were measured
    # without a sync per write; the operator's clusters sync (FsConf.sync_data).
    args = ["render", "fs-conf", "--name", FS_NAME, "--namespace", "lab", "--servers", str(len(servers)),
            "--storage-root", str(storage), "--mount-path", MOUNT, "--no-file-stuffing", "--no-sync-data", "--json"]
    for end in servers:
        args += ["--address", f"{end.ip}:{PORT}"]
    doc: dict[str, Any] = pfslayout_json(*args)
    return doc


def _as_nobody(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]


def _env(prefix: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (str(prefix / "lib"), env.get("LD_LIBRARY_PATH")) if p)
    env["PATH"] = f"{prefix / 'sbin'}:{prefix / 'bin'}:{env['PATH']}"
    return env


def prepare_dir(path: Path) -> None:
    """A directory the unprivileged servers can write."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(path, nobody.pw_uid, nobody.pw_gid)


def start(prefix: Path, servers: list[Endpoint], state_dir: Path, storage: Path) -> tuple[dict[str, Any], list[int]]:
    """Write fs.conf and pvfs2tab under ``state_dir``, create each server's storage and start the
    servers; returns the render document and the servers' PIDs, in server order."""
    doc = render(servers, storage)
    conf = state_dir / "fs.conf"
    conf.write_text(doc["fsConf"])
    (state_dir / "pvfs2tab").write_text(doc["pvfs2tab"])
    parsed = parse_fs_conf(doc["fsConf"])
    env = _env(prefix)
    pids = []
    for end, entry in zip(servers, doc["servers"]):
        alias = entry["alias"]
        opts = parsed.server_options[alias]
        script = storage_init_script(str(conf), opts["MetadataStorageSpace"], opts["DataStorageSpace"], alias)
        done = subprocess.run(in_ns(end.netns, *_as_nobody(["sh", "-c", script])), env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise LabError(f"creating the storage of {alias} failed: {(done.stdout + done.stderr).strip()[-800:]}")
        log = open(state_dir / f"{alias}.log", "ab")  # noqa: SIM115 - handed to the server, closed here after
        argv = server_args(str(conf), alias, str(prefix / "sbin" / "pvfs2-server"))
        proc = subprocess.Popen(in_ns(end.netns, *_as_nobody(argv)), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        log.close()
        pids.append(proc.pid)  # ip netns exec and setpriv exec the server: this is the server's PID
    for end, entry, pid in zip(servers, doc["servers"], pids):
        _wait_listening(end, entry["alias"], pid, state_dir)
    return doc, pids


def _wait_listening(end: Endpoint, alias: str, pid: int, state_dir: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            raise LabError(f"{alias} exited at start: {tail(state_dir / f'{alias}.log')}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((end.ip, PORT)) == 0:
                return
        time.sleep(0.2)
    raise LabError(f"{alias} did not listen on {end.ip}:{PORT} within {timeout:.0f} s: "
                   f"{tail(state_dir / f'{alias}.log')}")


def tail(path: Path, chars: int = 800) -> str:
    return path.read_text(errors="replace")[-chars:].strip() if path.exists() else "(no log)"


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def is_server(pid: int) -> bool:
    """Still one of our pvfs2-servers (a recorded PID may have been reused after a crash)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmd) and cmd[0].endswith(b"pvfs2-server")


def stop(pids: list[int], timeout: float = 15) -> list[int]:
    """SIGTERM, then SIGKILL after ``timeout``; returns the PIDs that were signalled."""
    ours = [pid for pid in pids if is_server(pid)]
    for pid in ours:
        send_signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(pid) for pid in ours):
        time.sleep(0.1)
    for pid in ours:
        if alive(pid):
            send_signal(pid, signal.SIGKILL)
    return ours


def send_signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
