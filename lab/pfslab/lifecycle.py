"""``lab up`` and ``lab down``: the emulated cluster's whole life, with its state in one directory.

``up`` checks what it needs first and says exactly what is missing; any failure after that tears down
what was built. ``down`` stops the recorded servers by PID, then anything still running in the lab's
namespaces, unmounts the storage, deletes the namespaces and links by the lab's prefix and removes the
state directory — so it also cleans up after a crash or a failed ``up``, with or without a state file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pfslab import net, servers
from pfslab.net import LabError
from pfslab.runs import Clients, Tools

STATE_DIR = Path(os.environ.get("PFSLAYOUT_LAB_DIR", "/run/pfs-layout-lab"))
MAX_CLIENT_NAMESPACES = 8
STORAGE_SIZE = os.environ.get("PFSLAYOUT_LAB_STORAGE", "4g")  # tmpfs; probe files are deleted after each group


@dataclass
class LabState:
    servers: int
    rate: str
    client_namespaces: int
    orangefs_version: str
    pids: list[int] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    started: float = 0.0

    def clients(self, ranks_per_node: int) -> Clients:
        return Clients(tuple(net.client(j).netns for j in range(self.client_namespaces)), ranks_per_node)

    @property
    def pvfs2tab(self) -> Path:
        return STATE_DIR / "pvfs2tab"


def state_file() -> Path:
    return STATE_DIR / "state.json"


def load() -> LabState:
    if not state_file().exists():
        raise LabError(f"no lab is up ({state_file()} missing): run `lab/lab up --servers N --rate R` first")
    return LabState(**json.loads(state_file().read_text()))


def missing_prerequisites() -> list[str]:
    """What this machine lacks for the lab, each with what to do; empty when it can run."""
    out = []
    if os.geteuid() != 0:
        out.append("root: network namespaces, veths and tc need it (run as root)")
    for tool, pkg in (("ip", "iproute2"), ("tc", "iproute2"), ("setpriv", "util-linux")):
        if shutil.which(tool) is None:
            out.append(f"{tool}: apt-get install {pkg}")
    if not Path("/proc/self/ns/net").exists():
        out.append("network namespaces: the kernel has none (CONFIG_NET_NS)")
    try:
        Tools.from_env()
    except LabError as e:
        out.append(str(e))
    return out


def orangefs_version(tools: Tools) -> str:
    done = subprocess.run([str(tools.orangefs / "sbin" / "pvfs2-server"), "--version"], capture_output=True,
                          text=True, timeout=30, env=tools.env(STATE_DIR / "pvfs2tab"), check=False)
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else "unknown"


def up(n_servers: int, rate: str, client_namespaces: int) -> LabState:
    if n_servers < 1:
        raise LabError(f"--servers {n_servers}: give at least 1 server (2 or more to compare layouts)")
    if not 0 <= client_namespaces <= MAX_CLIENT_NAMESPACES:
        raise LabError(f"--client-namespaces {client_namespaces}: give 0 (clients in the root namespace) to "
                       f"{MAX_CLIENT_NAMESPACES} (one client node per namespace)")
    net.validate_rate(rate)
    if missing := missing_prerequisites():
        raise LabError("the lab cannot run here: " + "; ".join(missing))
    if state_file().exists() or net.lab_namespaces():
        raise LabError(f"a lab is already up ({STATE_DIR}): run `lab/lab down` first")
    tools = Tools.from_env()
    try:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        STATE_DIR.chmod(0o755)  # the servers run as nobody and read fs.conf from here
        storage = STATE_DIR / "storage"
        storage.mkdir(exist_ok=True)
        net.sh("mount", "-t", "tmpfs", "-o", f"size={STORAGE_SIZE},mode=0755", "pfslab-storage", str(storage))
        servers.prepare_dir(storage)
        srv, cli = net.build(n_servers, rate, client_namespaces)
        state = LabState(n_servers, rate, client_namespaces, orangefs_version(tools),
                         namespaces=[e.netns for e in srv + cli], started=time.time())
        state_file().write_text(json.dumps(asdict(state), indent=1))  # from here `down` knows the PIDs
        _, pids = servers.start(tools.orangefs, srv, STATE_DIR, storage)
        state.pids = pids
        state_file().write_text(json.dumps(asdict(state), indent=1))
        return state
    except BaseException:
        down()
        raise


def down() -> list[str]:
    """Remove everything the lab made; returns what was removed (empty: nothing was up)."""
    removed = []
    pids: list[int] = []
    if state_file().exists():
        try:
            pids = list(json.loads(state_file().read_text()).get("pids", []))
        except (ValueError, OSError):
            pids = []  # a torn state file: the namespace sweep below still finds the servers
    removed += [f"server pid {p}" for p in servers.stop(pids)]
    for ns in net.lab_namespaces():  # anything left in a lab namespace: servers not recorded, stray clients
        stray = net.netns_pids(ns)
        for pid in stray:
            servers.send_signal(pid, signal.SIGKILL)
        removed += [f"process {p} in {ns}" for p in stray]
    storage = STATE_DIR / "storage"
    if os.path.ismount(storage):
        for _ in range(50):  # a killed server may hold the mount for a moment
            if net.sh("umount", str(storage), check=False).returncode == 0:
                removed.append(f"tmpfs {storage}")
                break
            time.sleep(0.1)
        else:
            raise LabError(f"cannot unmount {storage}: `fuser -m {storage}` shows who holds it")
    removed += net.teardown()
    if STATE_DIR.exists():
        shutil.rmtree(STATE_DIR)
        removed.append(f"state {STATE_DIR}")
    return removed


def leftovers() -> list[str]:
    """What of a lab exists on the machine (for tests and `lab status`)."""
    out = [f"netns {n}" for n in net.lab_namespaces()] + [f"link {n}" for n in net.lab_links()]
    if STATE_DIR.exists():
        out.append(f"state {STATE_DIR}")
    return out
