"""The lab's network: a private bridge, one network namespace per server (and per client namespace), a
veth from each namespace to the bridge, and token-bucket shaping of every server link in both directions.

Why these settings (docs/lab.md, "Network"):

* Both ends of each server link are shaped (``tbf`` on the bridge-side end for client → server, inside
  the namespace for server → client): a per-server link is the resource the layouts share out.
* veth sends GSO packets of up to 64 KiB; a tbf whose burst is smaller segments them in software and burns
  the CPU the servers and clients need. ``gso_max_size 16384`` on both ends of every lab veth and on the
  bridge, with a 17 kB burst, keeps 200 Mbit/s at about a quarter of a core instead of most of one.
* Client links are not shaped: a client link slower than a server link makes every layout tie at the
  client's rate.
* The kernel may lack netem, so nothing adds delay or loss: the per-message cost is the software round trip.

Every object is named with the lab's prefix, so ``teardown`` removes what a failed ``up`` left behind
without any record of it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

PREFIX = os.environ.get("PFSLAYOUT_LAB_PREFIX", "pfslab")
BRIDGE = f"{PREFIX}0"
# a /24 nothing else on the machine routes (the test cluster's real node uses 10.250.0.0/24)
NET = os.environ.get("PFSLAYOUT_LAB_NET", "10.251.0")
HOST_IP = f"{NET}.1"
GSO_MAX = 16384
BURST = "17kb"
SERVER_BASE = 10  # server i is NET.(11 + i)
CLIENT_BASE = 100  # client namespace j is NET.(101 + j)


class LabError(RuntimeError):
    """A lab step failed; the message names the step and what to do."""


@dataclass(frozen=True)
class Endpoint:
    """A namespace on the bridge: its name, its veth's bridge-side name and its address."""

    netns: str
    host_if: str
    ip: str


def server(i: int) -> Endpoint:
    return Endpoint(f"{PREFIX}-s{i}", f"{PREFIX}s{i}", f"{NET}.{SERVER_BASE + 1 + i}")


def client(j: int) -> Endpoint:
    return Endpoint(f"{PREFIX}-c{j}", f"{PREFIX}c{j}", f"{NET}.{CLIENT_BASE + 1 + j}")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if check and done.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed: {(done.stderr or done.stdout).strip()}")
    return done


def in_ns(netns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv]


def validate_rate(rate: str) -> str:
    """tc rate syntax with a unit (200mbit, 1gbit, 25mbps): a bare number is bits/s to tc, rarely meant."""
    digits = rate.rstrip("abgikmpstABGIKMPST")
    if not digits or rate == digits:
        raise LabError(f"--rate {rate!r}: give a number with a tc unit, e.g. 200mbit or 1gbit")
    try:
        float(digits)
    except ValueError:
        raise LabError(f"--rate {rate!r}: give a number with a tc unit, e.g. 200mbit or 1gbit") from None
    return rate


def _veth(end: Endpoint) -> None:
    sh("ip", "netns", "add", end.netns)
    sh("ip", "link", "add", end.host_if, "type", "veth", "peer", "name", "eth0", "netns", end.netns)
    sh("ip", "link", "set", end.host_if, "gso_max_size", str(GSO_MAX), "master", BRIDGE, "up")
    sh(*in_ns(end.netns, "ip", "link", "set", "eth0", "gso_max_size", str(GSO_MAX)))
    sh(*in_ns(end.netns, "ip", "addr", "add", f"{end.ip}/24", "dev", "eth0"))
    sh(*in_ns(end.netns, "ip", "link", "set", "eth0", "up"))
    sh(*in_ns(end.netns, "ip", "link", "set", "lo", "up"))


def _shape(end: Endpoint, rate: str) -> None:
    tbf = ["tbf", "rate", rate, "burst", BURST, "latency", "50ms"]
    sh("tc", "qdisc", "replace", "dev", end.host_if, "root", *tbf)
    sh(*in_ns(end.netns, "tc", "qdisc", "replace", "dev", "eth0", "root", *tbf))


def build(servers: int, rate: str, client_namespaces: int) -> tuple[list[Endpoint], list[Endpoint]]:
    """Bridge, server namespaces with shaped links, client namespaces with unshaped ones."""
    ipaddress.ip_address(HOST_IP)  # a malformed PFSLAYOUT_LAB_NET fails here, before anything exists
    if sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        raise LabError(f"the lab's bridge {BRIDGE} already exists: run `lab/lab down` first")
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "link", "set", BRIDGE, "gso_max_size", str(GSO_MAX))
    # bridged lab traffic skips the host's iptables (br_netfilter, loaded for a Kubernetes node's bridge,
    # would otherwise pass every lab frame through its rules): the lab's results must not depend on them.
    # Older kernels lack the per-bridge switch; there the rules just cost some CPU.
    sh("ip", "link", "set", BRIDGE, "type", "bridge", "nf_call_iptables", "0", check=False)
    sh("ip", "addr", "add", f"{HOST_IP}/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    srv = [server(i) for i in range(servers)]
    cli = [client(j) for j in range(client_namespaces)]
    for end in srv:
        _veth(end)
        _shape(end, rate)
    for end in cli:
        _veth(end)
    return srv, cli


# exactly the names this lab makes, so that labs with other prefixes (the smoke test's) are left alone
_NETNS = re.compile(rf"^{re.escape(PREFIX)}-[sc][0-9]+$")
_LINK = re.compile(rf"^{re.escape(PREFIX)}(0|[sc][0-9]+)$")


def lab_namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if _NETNS.match(n)]


def lab_links() -> list[str]:
    out = sh("ip", "-o", "link", "show", check=False).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@", 1)[0]
            if _LINK.match(name):
                names.append(name)
    return names


def netns_pids(netns: str) -> list[int]:
    out = sh("ip", "netns", "pids", netns, check=False).stdout
    return [int(x) for x in out.split() if x.isdigit()]


def teardown(namespaces: Sequence[str] | None = None) -> list[str]:
    """Delete the lab's namespaces and links (by prefix when ``namespaces`` is None); returns what was
    removed. Processes must be gone first: a namespace outlives its name while a process is in it."""
    removed = []
    for ns in namespaces if namespaces is not None else lab_namespaces():
        if sh("ip", "netns", "del", ns, check=False).returncode == 0:
            removed.append(f"netns {ns}")
    for link in lab_links():  # host-side veth ends vanish with their peers; the bridge stays until now
        if sh("ip", "link", "del", link, check=False).returncode == 0:
            removed.append(f"link {link}")
    return removed
