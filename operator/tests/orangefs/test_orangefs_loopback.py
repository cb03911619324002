"""Real OrangeFS from the operator's rendering: `pfslayout render fs-conf`/`pvfs2tab` on loopback, the
init container's storage guard, `pvfs2-server -d -a <alias>`, `pvfs2-ping`, data in and out, and the
scale-up the operator performs (new alias + new fixed-slot handle ranges, existing data kept)."""

from __future__ import annotations

import hashlib
import os

import pytest

from pfslayout.orangefs.fsconf import parse_fs_conf
from pfstestkit.ofs_loopback import (
    MOUNT,
    OrangeFS,
    ServerGroup,
    datafiles,
    free_ports,
    init_and_start,
    ping,
    render,
    tool,
)


@pytest.mark.parametrize("n", [2, 4])
def test_rendered_config_runs_real_servers_that_pass_ping(orangefs: OrangeFS, servers: ServerGroup, n: int) -> None:
    ports = free_ports(n)
    doc = render(servers, ports)
    outputs = init_and_start(servers, doc, ports)
    assert all("creating storage" in out for out in outputs), outputs
    ping(orangefs, servers, doc["fsId"])
    # In the foreground the log goes to stderr (what `kubectl logs` shows), whatever LogFile says.
    for entry in doc["servers"]:
        assert "PVFS2 Server ready" in servers.output(entry["alias"]), servers.output(entry["alias"])
    # Every server stores data: a large file spreads over all n with the default distribution.
    blob = servers.work.path / "blob"
    blob.write_bytes(os.urandom(3 * 1024 * 1024))
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/blob").returncode == 0
    assert datafiles(orangefs, servers, f"{MOUNT}/blob") == n


def test_restart_keeps_storage_and_scale_up_keeps_data(orangefs: OrangeFS, servers: ServerGroup) -> None:
    ports = free_ports(4)
    doc3 = render(servers, ports[:3])
    init_and_start(servers, doc3, ports[:3])
    blob = servers.work.path / "blob"
    blob.write_bytes(os.urandom(2 * 1024 * 1024 + 12345))
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/before").returncode == 0
    assert datafiles(orangefs, servers, f"{MOUNT}/before") == 3
    servers.stop_all()

    # What the operator does on scale-up: a new fs.conf (one more alias, ranges of a fresh slot), every
    # pod's init step again (existing storage must be kept), then all servers with the new config.
    doc4 = render(servers, ports)
    old = parse_fs_conf(doc3["fsConf"])
    new = parse_fs_conf(doc4["fsConf"])
    for alias, span in old.data_ranges.items():
        assert new.data_ranges[alias] == span
    outputs = init_and_start(servers, doc4, ports)
    assert all("not recreating" in out for out in outputs[:3]), outputs
    assert "creating storage" in outputs[3]
    ping(orangefs, servers, doc4["fsId"])

    back = servers.work.path / "back"
    assert tool(orangefs, servers, "pvfs2-cp", f"{MOUNT}/before", str(back)).returncode == 0
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(blob.read_bytes()).digest()
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/after").returncode == 0
    assert datafiles(orangefs, servers, f"{MOUNT}/after") == 4


def test_more_metadata_servers_on_existing_storage(orangefs: OrangeFS, servers: ServerGroup) -> None:
    """metadataCount 1 -> 3 adds meta ranges to servers that so far held only data: applied live by the
    operator, so it must leave existing files readable and let the new metadata servers serve."""
    ports = free_ports(3)
    doc = render(servers, ports, "--metadata-servers", "1")
    assert parse_fs_conf(doc["fsConf"]).filesystem["FileStuffing"] == "no"
    init_and_start(servers, doc, ports)
    blob = servers.work.path / "blob"
    blob.write_bytes(os.urandom(1024 * 1024 + 7))
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/before").returncode == 0
    servers.stop_all()
    doc = render(servers, ports, "--metadata-servers", "3")
    assert len(parse_fs_conf(doc["fsConf"]).meta_ranges) == 3
    init_and_start(servers, doc, ports)
    ping(orangefs, servers, doc["fsId"])
    back = servers.work.path / "back"
    assert tool(orangefs, servers, "pvfs2-cp", f"{MOUNT}/before", str(back)).returncode == 0
    assert back.read_bytes() == blob.read_bytes()
    # New files get their metadata on any of the three servers now: create a few and look.
    meta_servers = set()
    for i in range(9):
        assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/after{i}").returncode == 0
        out = tool(orangefs, servers, "pvfs2-viewdist", "-f", f"{MOUNT}/after{i}").stdout
        meta_servers |= {x.split(":", 1)[1].strip() for x in out.splitlines() if x.startswith("Metadataserver")}
    assert len(meta_servers) > 1, meta_servers


def test_new_default_distribution_applies_to_new_files_only(orangefs: OrangeFS, servers: ServerGroup) -> None:
    """A spec.distribution change rolls the servers with a new fs.conf: old files keep their layout."""
    ports = free_ports(2)
    init_and_start(servers, render(servers, ports), ports)
    blob = servers.work.path / "blob"
    blob.write_bytes(os.urandom(2 * 1024 * 1024))
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/old").returncode == 0
    servers.stop_all()
    init_and_start(servers, render(servers, ports, "--strip-size", "1048576"), ports)

    def strip(path: str) -> str:
        out = tool(orangefs, servers, "pvfs2-viewdist", "-f", path).stdout
        return next(x for x in out.splitlines() if x.startswith("strip_size"))
    assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{MOUNT}/new").returncode == 0
    assert strip(f"{MOUNT}/old") == "strip_size:65536"
    assert strip(f"{MOUNT}/new") == "strip_size:1048576"
    back = servers.work.path / "back"
    assert tool(orangefs, servers, "pvfs2-cp", f"{MOUNT}/old", str(back)).returncode == 0
    assert back.read_bytes() == blob.read_bytes()
