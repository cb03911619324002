"""fs.conf rendering: deterministic, structurally what pvfs2-server parses, ranges that never move."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from pfslayout import naming
from pfslayout.errors import InputError
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Address, Topology, fs_conf_for
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.orangefs import handles
from pfslayout.orangefs.commands import server_args, storage_init_script
from pfslayout.orangefs.fsconf import Distribution, FsConf, ServerEntry, parse_fs_conf, render_fs_conf
from pfslayout.orangefs.pvfs2tab import render_pvfs2tab

REPO = Path(__file__).resolve().parents[3]


def spec(**over: object) -> object:
    raw = {"storage": {"type": "emptyDir"}, **over}
    return parse_spec(raw)


def conf_for(n: int = 4, **over: object) -> FsConf:
    s = spec(**{"servers": {"count": n}, **over})
    return fs_conf_for(s, "demo", "lab", Topology.of(s))  # type: ignore[arg-type]


def test_one_alias_per_server_pod_dns_name_in_ordinal_order() -> None:
    parsed = parse_fs_conf(render_fs_conf(conf_for(12)))
    assert list(parsed.aliases) == [f"demo-server-{i}" for i in range(12)]
    assert parsed.aliases["demo-server-10"] == "tcp://demo-server-10.demo-server.lab.svc.cluster.local:3334"
    # Data servers are used in <DataHandleRanges> order, so that order is the ordinal order.
    assert parsed.data_order == [f"demo-server-{i}" for i in range(12)]


def test_render_is_byte_identical_for_the_same_input() -> None:
    assert render_fs_conf(conf_for(4)) == render_fs_conf(conf_for(4))


def test_fs_id_is_derived_from_namespace_and_name_and_stable() -> None:
    a = naming.derive_fs_id("lab", "demo")
    assert a == naming.derive_fs_id("lab", "demo")
    assert 1 <= a <= 2**31 - 1
    assert a != naming.derive_fs_id("lab", "demo2")
    assert a != naming.derive_fs_id("lab2", "demo")
    parsed = parse_fs_conf(render_fs_conf(conf_for(2)))
    assert parsed.filesystem["ID"] == str(a)


def test_explicit_fs_id_wins() -> None:
    parsed = parse_fs_conf(render_fs_conf(conf_for(2, fs={"id": 4242, "name": "scratch"})))
    assert parsed.filesystem["ID"] == "4242"
    assert parsed.filesystem["Name"] == "scratch"


def test_handle_ranges_are_disjoint_and_root_handle_is_in_server_0_meta_range() -> None:
    parsed = parse_fs_conf(render_fs_conf(conf_for(handles.MAX_SERVERS)))
    spans = sorted(list(parsed.meta_ranges.values()) + list(parsed.data_ranges.values()))
    assert len(spans) == 2 * handles.MAX_SERVERS
    for (lo1, hi1), (lo2, _) in itertools.pairwise(spans):
        assert lo1 <= hi1 < lo2
    assert spans[0][0] == handles.FIRST_HANDLE and spans[-1][1] <= handles.LAST_HANDLE
    lo, hi = parsed.meta_ranges["demo-server-0"]
    assert lo <= int(parsed.filesystem["RootHandle"]) <= hi


def test_adding_servers_keeps_every_existing_range() -> None:
    small = parse_fs_conf(render_fs_conf(conf_for(2)))
    large = parse_fs_conf(render_fs_conf(conf_for(6)))
    for alias, span in small.meta_ranges.items():
        assert large.meta_ranges[alias] == span
    for alias, span in small.data_ranges.items():
        assert large.data_ranges[alias] == span
    assert len(large.data_ranges) == 6


def test_metadata_count_limits_meta_ranges_and_turns_stuffing_off() -> None:
    parsed = parse_fs_conf(render_fs_conf(conf_for(4, servers={"count": 4, "metadataCount": 2})))
    assert list(parsed.meta_ranges) == ["demo-server-0", "demo-server-1"]
    assert len(parsed.data_ranges) == 4
    assert parsed.filesystem["FileStuffing"] == "no"
    assert parse_fs_conf(render_fs_conf(conf_for(4))).filesystem["FileStuffing"] == "yes"


def test_file_stuffing_and_log_file_options_override_the_defaults() -> None:
    # metadata on 2 of 4 servers would turn stuffing off; an explicit fileStuffing wins either way
    forced_on = conf_for(4, servers={"count": 4, "metadataCount": 2}, fs={"fileStuffing": True})
    assert parse_fs_conf(render_fs_conf(forced_on)).filesystem["FileStuffing"] == "yes"
    off = parse_fs_conf(render_fs_conf(conf_for(4, fs={"fileStuffing": False})))
    assert off.filesystem["FileStuffing"] == "no"
    s = spec(servers={"count": 2})
    logged = fs_conf_for(s, "demo", "lab", Topology.of(s), log_file="/var/log/orangefs.log")  # type: ignore[arg-type]
    assert parse_fs_conf(render_fs_conf(logged)).defaults["LogFile"] == "/var/log/orangefs.log"
    with pytest.raises(InputError) as err:
        render_fs_conf(fs_conf_for(s, "demo", "lab", Topology.of(s), log_file="relative.log"))  # type: ignore[arg-type]
    assert err.value.field == "logFile"


def test_writes_sync_data_unless_the_spec_says_otherwise() -> None:
    # off, a killed server loses the size of what it acknowledged last (test_killed_server_loopback.py)
    assert parse_fs_conf(render_fs_conf(conf_for(4))).filesystem["StorageHints.TroveSyncData"] == "yes"
    off = parse_fs_conf(render_fs_conf(conf_for(4, fs={"syncData": False})))
    assert off.filesystem["StorageHints.TroveSyncData"] == "no"
    assert off.filesystem["StorageHints.TroveSyncMeta"] == "yes"


def test_distributions_and_default_num_dfiles() -> None:
    simple = parse_fs_conf(render_fs_conf(conf_for(4, distribution={"stripSize": 1048576})))
    assert simple.distribution == {"name": "simple_stripe", "params": {"strip_size": 1048576}}
    assert "DefaultNumDFiles" not in simple.filesystem
    twod = parse_fs_conf(render_fs_conf(conf_for(4, distribution={
        "name": "twod_stripe", "numGroups": 2, "groupStripFactor": 8, "numDatafiles": 2})))
    assert twod.distribution == {"name": "twod_stripe",
                                 "params": {"strip_size": 65536, "num_groups": 2, "group_strip_factor": 8}}
    assert twod.filesystem["DefaultNumDFiles"] == "2"
    basic = parse_fs_conf(render_fs_conf(conf_for(4, distribution={"name": "basic_dist"})))
    assert basic.distribution == {"name": "basic_dist", "params": {}}


def test_defaults_match_genconfig_shape_and_pod_paths() -> None:
    parsed = parse_fs_conf(render_fs_conf(conf_for(2)))
    assert parsed.defaults["BMIModules"] == "bmi_tcp"
    assert parsed.defaults["DataStorageSpace"] == "/var/lib/orangefs/data"
    assert parsed.defaults["MetadataStorageSpace"] == "/var/lib/orangefs/meta"
    assert parsed.defaults["Security.TurnOffTimeouts"] == "yes"
    assert parsed.filesystem["StorageHints.TroveMethod"] == "alt-aio"
    assert parsed.server_options == {}


def test_explicit_addresses_and_storage_root_for_loopback() -> None:
    s = spec(servers={"count": 3})
    conf = fs_conf_for(s, "t", "default", Topology.of(s),  # type: ignore[arg-type]
                       addresses=[Address.parse(f"127.0.0.1:{4000 + i}") for i in range(3)],
                       storage_root="/tmp/x")
    parsed = parse_fs_conf(render_fs_conf(conf))
    assert parsed.aliases == {f"t-server-{i}": f"tcp://127.0.0.1:{4000 + i}" for i in range(3)}
    assert parsed.server_options["t-server-2"] == {"DataStorageSpace": "/tmp/x/t-server-2/data",
                                                   "MetadataStorageSpace": "/tmp/x/t-server-2/meta"}
    assert parsed.defaults["LogFile"] == "/dev/null"


@pytest.mark.parametrize(("change", "field"), [
    ({"servers": ()}, "servers"),
    ({"fs_id": 0}, "fs.id"),
    ({"name": "1bad"}, "fs.name"),
    ({"distribution": Distribution("twod_stripe", 65536, 3)}, "distribution.numGroups"),
    ({"distribution": Distribution("simple_stripe", 3000)}, "distribution.stripSize"),
    ({"distribution": Distribution("varstrip_dist")}, "distribution.name"),
    ({"default_num_dfiles": 5}, "distribution.numDatafiles"),
])
def test_invalid_configs_name_the_field(change: dict[str, object], field: str) -> None:
    base = {"name": "orangefs", "fs_id": 7, "servers": tuple(ServerEntry(i, f"s{i}", f"h{i}") for i in range(4))}
    base.update(change)
    with pytest.raises(InputError) as err:
        render_fs_conf(FsConf(**base))  # type: ignore[arg-type]
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_server_0_must_hold_metadata_and_addresses_must_differ() -> None:
    with pytest.raises(InputError, match="server 0"):
        render_fs_conf(FsConf("o", 1, (ServerEntry(0, "a", "h", metadata=False), ServerEntry(1, "b", "h2"))))
    with pytest.raises(InputError, match="share an address"):
        render_fs_conf(FsConf("o", 1, (ServerEntry(0, "a", "h"), ServerEntry(1, "b", "h"))))
    with pytest.raises(InputError, match="ordinal 64"):
        render_fs_conf(FsConf("o", 1, (ServerEntry(0, "a", "h"), ServerEntry(64, "b", "h2"))))


def test_pvfs2tab_lists_every_server_with_the_fs_name() -> None:
    conf = conf_for(3, fs={"name": "scratch"})
    line = render_pvfs2tab(conf, "/mnt/pfs")
    uri, mount, fstype, opts, *_ = line.split()
    assert uri.split(",") == [f"tcp://demo-server-{i}.demo-server.lab.svc.cluster.local:3334/scratch" for i in range(3)]
    assert all(u.count("/") == 3 for u in uri.split(","))  # libpvfs2 needs exactly three slashes per token
    assert (mount, fstype, opts) == ("/mnt/pfs", "pvfs2", "defaults,noauto")
    with pytest.raises(InputError):
        render_pvfs2tab(conf, "relative/path")


def test_storage_init_script_guards_mkfs_and_server_runs_in_foreground() -> None:
    script = storage_init_script("/etc/orangefs/fs.conf", "/s/meta", "/s/data", '"$POD_NAME"')
    assert "if [ -e /s/meta/collections.db ]" in script
    assert 'pvfs2-server -f -a "$POD_NAME" /etc/orangefs/fs.conf' in script
    assert server_args("/c", "$(POD_NAME)") == ["pvfs2-server", "-d", "-a", "$(POD_NAME)", "/c"]


def test_max_servers_matches_the_crd() -> None:
    crd = yaml.safe_load((REPO / "crds" / "orangefsclusters.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    count = schema["properties"]["spec"]["properties"]["servers"]["properties"]["count"]
    assert count["maximum"] == handles.MAX_SERVERS
    assert count["default"] == parse_spec({"storage": {"type": "emptyDir"}}).servers.count
