"""Render an OrangeFS `fs.conf` that a stock `pvfs2-server` accepts, deterministically.

The layout follows what `pvfs2-genconfig` emits on OrangeFS master (`emit_defaults`, `emit_aliases`,
`emit_filesystem`, `emit_distribution`, `emit_serveropts`), with three deliberate differences:

* the FS ID is given, never random (genconfig draws one with `rand()`),
* servers keep StatefulSet ordinal order instead of genconfig's alphabetical sort (`-server-10` would
  sort before `-server-2`), because data servers are used in `<DataHandleRanges>` order and layouts
  name servers by ordinal,
* handle ranges come from fixed per-ordinal slots (see `handles.py`) so adding servers never moves an
  existing range.

The same input always gives byte-identical output: the operator stores it in a ConfigMap and hashes it
into the server pods' template, so any change restarts the servers and nothing else does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pfslayout.errors import InputError
from pfslayout.orangefs import handles

DISTRIBUTIONS = ("simple_stripe", "twod_stripe", "basic_dist")
DEFAULT_STRIP_SIZE = 65536
DEFAULT_PORT = 3334
DEFAULT_DATA_STORAGE = "/var/lib/orangefs/data"
DEFAULT_META_STORAGE = "/var/lib/orangefs/meta"
# In the foreground (`-d`, how the pods run it) pvfs2-server logs to stderr -- `kubectl logs` -- and only
# fopen()s LogFile once as a check (pvfs2-server.c server_initialize). /dev/stdout fails that check for a
# non-root server whose stdout belongs to another user (a runtime's pipe, a root-owned file: "error
# opening log file /dev/stdout", seen in the OrangeFS tier), so the check gets a file anyone can open.
DEFAULT_LOG_FILE = "/dev/null"

_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PATH = re.compile(r"^/[^\s]*$")


@dataclass(frozen=True)
class ServerEntry:
    """One pvfs2-server: its alias, the address every peer and client dials, and its role.

    `data_storage`/`meta_storage`/`log_file` are per-server overrides (a `<ServerOptions>` block);
    servers in pods share the defaults, servers on one host (the loopback tests) need their own.
    """

    ordinal: int
    alias: str
    host: str
    port: int = DEFAULT_PORT
    metadata: bool = True
    data_storage: str | None = None
    meta_storage: str | None = None
    log_file: str | None = None

    @property
    def url(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @property
    def has_options(self) -> bool:
        return any(v is not None for v in (self.data_storage, self.meta_storage, self.log_file))


@dataclass(frozen=True)
class Distribution:
    name: str = "simple_stripe"
    strip_size: int = DEFAULT_STRIP_SIZE
    num_groups: int | None = None
    group_strip_factor: int | None = None

    def params(self) -> list[tuple[str, int]]:
        if self.name == "basic_dist":
            return []  # one datafile per file; the distribution takes no parameters
        out = [("strip_size", self.strip_size)]
        if self.name == "twod_stripe":
            assert self.num_groups is not None
            out.append(("num_groups", self.num_groups))
            if self.group_strip_factor is not None:
                out.append(("group_strip_factor", self.group_strip_factor))
        return out


@dataclass(frozen=True)
class FsConf:
    name: str
    fs_id: int
    servers: tuple[ServerEntry, ...]
    distribution: Distribution = field(default_factory=Distribution)
    default_num_dfiles: int = 0
    data_storage: str = DEFAULT_DATA_STORAGE
    meta_storage: str = DEFAULT_META_STORAGE
    log_file: str = DEFAULT_LOG_FILE
    stuffing: bool | None = None  # FileStuffing; None: genconfig's rule (see file_stuffing)
    # TroveSyncData. Off, a write is acknowledged before its datafile's new size reaches the server's
    # database on disk (dbpf-bstream.c syncs that size only for TROVE_SYNC writes): a server killed then
    # serves the datafile as empty after its restart and the acknowledged strips read back as zeros
    # (measured on loopback servers and on a kind node stopped, docs/reliability.md). On is OrangeFS's
    # own default; off only where the data is throwaway and write speed is measured (the performance lab).
    sync_data: bool = True

    @property
    def file_stuffing(self) -> bool:
        # Given, or genconfig's rule: stuffing only when every I/O server also holds metadata, otherwise
        # small files would pile up on the metadata subset. Stuffing keeps a new file on one server until
        # it grows, so files created through directory hints start out unstriped: a layout experiment (the
        # performance lab) turns it off.
        if self.stuffing is not None:
            return self.stuffing
        return all(s.metadata for s in self.servers)

    def pvfs2tab_uri(self) -> str:
        return ",".join(f"{s.url}/{self.name}" for s in self.servers)


def validate(conf: FsConf) -> None:
    """Raise InputError for anything pvfs2-server would reject or misread."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", conf.name):
        raise InputError("fs.name", f"{conf.name!r} is not a valid file-system name",
                         "use 1-32 letters, digits, '-' or '_', starting with a letter")
    if not 1 <= conf.fs_id <= 2**31 - 1:
        raise InputError("fs.id", f"{conf.fs_id} is outside 1..2147483647", "pick an ID in that range")
    n = len(conf.servers)
    if not 1 <= n <= handles.MAX_SERVERS:
        raise InputError("servers", f"{n} servers; must be 1..{handles.MAX_SERVERS}",
                         f"use between 1 and {handles.MAX_SERVERS} servers")
    ordinals = [s.ordinal for s in conf.servers]
    if len(set(ordinals)) != n:
        raise InputError("servers", f"duplicate server ordinals {ordinals}", "give each server its own ordinal")
    aliases = [s.alias for s in conf.servers]
    if len(set(aliases)) != n:
        raise InputError("servers", f"duplicate aliases {aliases}", "give each server its own alias")
    urls = [s.url for s in conf.servers]
    if len(set(urls)) != n:
        raise InputError("servers", f"two servers share an address in {urls}",
                         "give each server its own host:port")
    for s in conf.servers:
        handles.meta_range(s.ordinal)  # raises for ordinals without a slot
        if not _TOKEN.match(s.alias):
            raise InputError("servers", f"alias {s.alias!r} is not a single word", "use letters, digits, '.', '-'")
        if not _TOKEN.match(s.host):
            raise InputError("servers", f"host {s.host!r} is not a host name or address",
                             "use a DNS name or an IPv4 address")
        if not 1 <= s.port <= 65535:
            raise InputError("ports.tcp", f"port {s.port} is outside 1..65535", "use a port such as 3334")
        for what, path in (("dataStorage", s.data_storage), ("metaStorage", s.meta_storage),
                           ("logFile", s.log_file)):
            if path is not None and not _PATH.match(path):
                raise InputError(f"servers[{s.ordinal}].{what}", f"{path!r} is not an absolute path",
                                 "use an absolute path without spaces")
    for what, path in (("storage", conf.data_storage), ("storage", conf.meta_storage),
                       ("logFile", conf.log_file)):
        if not _PATH.match(path):
            raise InputError(what, f"{path!r} is not an absolute path", "use an absolute path without spaces")
    root_owner = min(conf.servers, key=lambda s: s.ordinal)
    if root_owner.ordinal != 0 or not root_owner.metadata:
        raise InputError("servers.metadataCount", "server 0 must exist and serve metadata: the root "
                         "directory's handle lies in its metadata range", "keep server 0 a metadata server")
    dist = conf.distribution
    if dist.name not in DISTRIBUTIONS:
        raise InputError("distribution.name", f"{dist.name!r} is not one of {', '.join(DISTRIBUTIONS)}",
                         "pick one of them (varstrip_dist belongs in a LayoutPolicy rule)")
    if dist.strip_size < 4096 or dist.strip_size & (dist.strip_size - 1):
        raise InputError("distribution.stripSize", f"{dist.strip_size} is not a power of two >= 4096",
                         "use e.g. 65536 or 1048576")
    if dist.name == "twod_stripe":
        if dist.num_groups is None or dist.num_groups < 1 or n % dist.num_groups:
            raise InputError("distribution.numGroups", f"{dist.num_groups} does not divide {n} servers",
                             "pick a divisor of the server count")
    elif dist.num_groups is not None or dist.group_strip_factor is not None:
        raise InputError("distribution.numGroups", f"only twod_stripe takes groups, not {dist.name}",
                         "drop numGroups/groupStripFactor or use twod_stripe")
    if not 0 <= conf.default_num_dfiles <= n:
        raise InputError("distribution.numDatafiles", f"{conf.default_num_dfiles} is outside 0..{n}",
                         "use 0 (all servers) or at most the server count")


def render_fs_conf(conf: FsConf) -> str:
    validate(conf)
    servers = sorted(conf.servers, key=lambda s: s.ordinal)
    lines = [
        "# OrangeFS fs.conf rendered by pfs-layout-operator. Do not edit: the operator rewrites it.",
        "<Defaults>",
        "\tUnexpectedRequests 50",
        "\tEventLogging none",
        "\tEnableTracing no",
        "\tLogStamp datetime",
        "\tBMIModules bmi_tcp",
        "\tFlowModules flowproto_multiqueue",
        "\tPerfUpdateInterval 1000",
        "\tServerJobBMITimeoutSecs 30",
        "\tServerJobFlowTimeoutSecs 30",
        "\tClientJobBMITimeoutSecs 300",
        "\tClientJobFlowTimeoutSecs 300",
        "\tClientRetryLimit 5",
        "\tClientRetryDelayMilliSecs 2000",
        "\tPrecreateBatchSize 0,1024,1024,1024,32,1024,0",
        "\tPrecreateLowThreshold 0,256,256,256,16,256,0",
        "",
        f"\tDataStorageSpace {conf.data_storage}",
        f"\tMetadataStorageSpace {conf.meta_storage}",
        "",
        f"\tLogFile {conf.log_file}",
        "",
        # Without key or certificate security genconfig always turns timeouts off; so do we.
        "\t<Security>",
        "\t\tTurnOffTimeouts yes",
        "\t</Security>",
        "</Defaults>",
        "",
        "<Aliases>",
    ]
    lines += [f"\tAlias {s.alias} {s.url}" for s in servers]
    lines += [
        "</Aliases>",
        "",
        "<FileSystem>",
        f"\tName {conf.name}",
        f"\tID {conf.fs_id}",
        f"\tRootHandle {handles.ROOT_HANDLE}",
    ]
    if conf.default_num_dfiles > 0:
        lines.append(f"\tDefaultNumDFiles {conf.default_num_dfiles}")
    lines += [
        f"\tFileStuffing {'yes' if conf.file_stuffing else 'no'}",
        "\tDistrDirServersInitial 1",
        "\tDistrDirServersMax 1",
        "\tDistrDirSplitSize 100",
        "\t<MetaHandleRanges>",
    ]
    lines += [f"\t\tRange {s.alias} {handles.meta_range(s.ordinal)}" for s in servers if s.metadata]
    lines += ["\t</MetaHandleRanges>", "\t<DataHandleRanges>"]
    lines += [f"\t\tRange {s.alias} {handles.data_range(s.ordinal)}" for s in servers]
    lines += [
        "\t</DataHandleRanges>",
        "\t<StorageHints>",
        "\t\tTroveSyncMeta yes",
        f"\t\tTroveSyncData {'yes' if conf.sync_data else 'no'}",
        "\t\tTroveMethod alt-aio",
        "\t</StorageHints>",
        "\t<Distribution>",
        f"\t\tName {conf.distribution.name}",
    ]
    for pname, value in conf.distribution.params():
        lines += [f"\t\tParam {pname}", f"\t\tValue {value}"]
    lines += ["\t</Distribution>", "</FileSystem>"]
    for s in servers:
        if not s.has_options:
            continue
        lines += ["", "<ServerOptions>", f"\tServer {s.alias}"]
        if s.data_storage is not None:
            lines.append(f"\tDataStorageSpace {s.data_storage}")
        if s.meta_storage is not None:
            lines.append(f"\tMetadataStorageSpace {s.meta_storage}")
        if s.log_file is not None:
            lines.append(f"\tLogFile {s.log_file}")
        lines.append("</ServerOptions>")
    return "\n".join(lines) + "\n"


@dataclass
class ParsedFsConf:
    """What `parse_fs_conf` reads back: enough to check a rendered or stored config structurally."""

    defaults: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    filesystem: dict[str, str] = field(default_factory=dict)
    meta_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    data_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    data_order: list[str] = field(default_factory=list)
    distribution: dict[str, object] = field(default_factory=dict)
    server_options: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_fs_conf(text: str) -> ParsedFsConf:
    """A small reader of the fs.conf dialect rendered above (contexts, `Key value` lines, comments).

    It is a checking aid, not a general OrangeFS parser: it raises ValueError on a line it cannot place,
    so a test notices when the renderer emits something unexpected.
    """
    out = ParsedFsConf()
    stack: list[str] = []
    option_server: str | None = None
    param: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("</"):
            if not stack or stack[-1] != line[2:-1]:
                raise ValueError(f"line {number}: {line} closes {stack[-1] if stack else 'nothing'}")
            stack.pop()
            continue
        if line.startswith("<"):
            stack.append(line[1:-1])
            if stack[-1] == "Distribution":
                out.distribution["params"] = {}
            continue
        key, _, value = line.partition(" ")
        value = value.strip()
        ctx = stack[-1] if stack else ""
        if ctx == "Defaults":
            out.defaults[key] = value
        elif ctx == "Security":
            out.defaults[f"Security.{key}"] = value
        elif ctx == "Aliases" and key == "Alias":
            alias, url = value.split()
            out.aliases[alias] = url
        elif ctx in ("MetaHandleRanges", "DataHandleRanges") and key == "Range":
            alias, span = value.split()
            lo, hi = (int(x) for x in span.split("-"))
            target = out.meta_ranges if ctx == "MetaHandleRanges" else out.data_ranges
            target[alias] = (lo, hi)
            if ctx == "DataHandleRanges":
                out.data_order.append(alias)
        elif ctx == "FileSystem":
            out.filesystem[key] = value
        elif ctx == "StorageHints":
            out.filesystem[f"StorageHints.{key}"] = value
        elif ctx == "Distribution":
            params = out.distribution["params"]
            assert isinstance(params, dict)
            if key == "Name":
                out.distribution["name"] = value
            elif key == "Param":
                param = value
            elif key == "Value" and param is not None:
                params[param] = int(value)
                param = None
            else:
                raise ValueError(f"line {number}: unexpected {key!r} in <Distribution>")
        elif ctx == "ServerOptions":
            if key == "Server":
                option_server = value
                out.server_options[value] = {}
            elif option_server is not None:
                out.server_options[option_server][key] = value
        else:
            raise ValueError(f"line {number}: {key!r} outside a known context ({ctx or 'top level'})")
    if stack:
        raise ValueError(f"unclosed context <{stack[-1]}>")
    return out
