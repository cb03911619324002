"""`pfslayout render fs-conf|pvfs2tab|manifests` -- what the operator would render, on stdout.

Both go through `pfslayout.kinds.orangefscluster.fsconf_from_spec.fs_conf_for`, the function the operator
uses, so for the same name, namespace and spec the output is byte-identical to the operator's ConfigMap.
`--address HOST:PORT` (once per server) and `--storage-root DIR` make a config for servers sharing one
host, e.g. on loopback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from pfslayout import naming
from pfslayout.cli._output import print_json
from pfslayout.errors import InputError
from pfslayout.kinds import examples
from pfslayout.kinds.orangefscluster.desired import desired_for_new
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Address, Topology, fs_conf_for
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.orangefs.fsconf import FsConf, render_fs_conf
from pfslayout.orangefs.pvfs2tab import DEFAULT_MOUNT_PATH, render_pvfs2tab

render_app = typer.Typer(name="render", help="Render OrangeFS configuration (fs.conf, pvfs2tab).",
                         no_args_is_help=True)


def _from_manifest(path: str) -> tuple[str | None, str | None, dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    except (yaml.YAMLError, UnicodeDecodeError) as err:  # binary input is not YAML either
        raise InputError("--from", f"{path} is not YAML ({err.__class__.__name__})",
            "pass an OrangeFSCluster manifest") from None
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "OrangeFSCluster":
            meta = doc.get("metadata") or {}
            return meta.get("name"), meta.get("namespace"), dict(doc.get("spec") or {})
    raise InputError("--from", f"{path} holds no OrangeFSCluster", "pass a file with kind: OrangeFSCluster")


def build(*, name: str | None, namespace: str | None, servers: int | None, service: str | None,
          metadata_servers: int | None, fs_name: str | None, fs_id: int | None, port: int | None,
          distribution: str | None, strip_size: int | None, num_groups: int | None,
          group_strip_factor: int | None, num_datafiles: int | None, cluster_domain: str,
          addresses: list[str] | None, storage_root: str | None, manifest: str | None,
          file_stuffing: bool | None = None, log_file: str | None = None,
          sync_data: bool | None = None) -> FsConf:
    raw: dict[str, Any] = {}
    if manifest:
        m_name, m_ns, raw = _from_manifest(manifest)
        name = name or m_name
        namespace = namespace or m_ns
    if not name:
        raise InputError("--name", "is required", "pass the OrangeFSCluster's name")
    namespace = namespace or "default"
    srv = dict(raw.get("servers") or {})
    if servers is None and addresses:
        servers = len(addresses)  # one server per address unless told otherwise
    if servers is not None:
        srv["count"] = servers
    if metadata_servers is not None:
        srv["metadataCount"] = metadata_servers
    raw["servers"] = srv
    fs = dict(raw.get("fs") or {})
    if fs_name is not None:
        fs["name"] = fs_name
    if fs_id is not None:
        fs["id"] = fs_id
    if file_stuffing is not None:
        fs["fileStuffing"] = file_stuffing
    if sync_data is not None:
        fs["syncData"] = sync_data
    raw["fs"] = fs
    if port is not None:
        raw["ports"] = {**(raw.get("ports") or {}), "tcp": port}
    dist = dict(raw.get("distribution") or {})
    for key, value in (("name", distribution), ("stripSize", strip_size), ("numGroups", num_groups),
                       ("groupStripFactor", group_strip_factor), ("numDatafiles", num_datafiles)):
        if value is not None:
            dist[key] = value
    raw["distribution"] = dist
    # Storage never reaches fs.conf; an emptyDir keeps the spec valid without a size.
    raw["storage"] = raw.get("storage") or {"type": "emptyDir"}
    spec = parse_spec(raw)
    parsed = [Address.parse(a) for a in addresses] if addresses else None
    if port is not None and parsed is not None:
        raise InputError("--port", "cannot be combined with --address", "put the port into each --address")
    return fs_conf_for(spec, name, namespace, Topology.of(spec), log_file=log_file, service=service,
                       cluster_domain=cluster_domain, addresses=parsed, storage_root=storage_root)


@render_app.command("fs-conf")
def fs_conf(
    name: Annotated[str | None, typer.Option("--name", help="OrangeFSCluster name")] = None,
    servers: Annotated[int | None, typer.Option("--servers", help="number of servers (default 4)")] = None,
    service: Annotated[str | None, typer.Option("--service", help="headless Service (default <name>-server)")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="namespace (default 'default')")] = None,
    metadata_servers: Annotated[int | None, typer.Option("--metadata-servers",
        help="first M servers also hold metadata (default all)")] = None,
    fs_name: Annotated[str | None, typer.Option("--fs-name", help="file-system name (default orangefs)")] = None,
    fs_id: Annotated[int | None, typer.Option("--fs-id", help="FS ID (default derived from namespace/name)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="BMI TCP port (default 3334)")] = None,
    distribution: Annotated[str | None, typer.Option("--distribution",
        help="simple_stripe, twod_stripe or basic_dist")] = None,
    strip_size: Annotated[int | None, typer.Option("--strip-size", help="strip size in bytes (default 65536)")] = None,
    num_groups: Annotated[int | None, typer.Option("--num-groups", help="twod_stripe groups")] = None,
    group_strip_factor: Annotated[int | None, typer.Option("--group-strip-factor", help="twod_stripe factor")] = None,
    num_datafiles: Annotated[int | None, typer.Option("--num-datafiles", help="DefaultNumDFiles (0 = all)")] = None,
    cluster_domain: Annotated[str, typer.Option("--cluster-domain",
        help="Kubernetes cluster domain")] = naming.DEFAULT_CLUSTER_DOMAIN,
    address: Annotated[list[str] | None, typer.Option("--address",
        help="HOST:PORT of each server in ordinal order, instead of pod DNS names")] = None,
    storage_root: Annotated[str | None, typer.Option("--storage-root",
        help="per-server storage under DIR/<alias>/ (servers sharing a host)")] = None,
    manifest: Annotated[str | None, typer.Option("--from",
        help="read name, namespace and spec from an OrangeFSCluster manifest")] = None,
    mount_path: Annotated[str, typer.Option("--mount-path",
        help="pvfs2tab mount point (in --json)")] = DEFAULT_MOUNT_PATH,
    file_stuffing: Annotated[bool | None, typer.Option("--file-stuffing/--no-file-stuffing",
        help="FileStuffing (default: on when every server holds metadata)")] = None,
    sync_data: Annotated[bool | None, typer.Option("--sync-data/--no-sync-data",
        help="TroveSyncData (default on: off loses acknowledged writes when a server is killed)")] = None,
    log_file: Annotated[str | None, typer.Option("--log-file",
        help="LogFile of every server (default /dev/null: servers in the foreground log to stderr)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Print the fs.conf the operator would put into the <name>-fs-conf ConfigMap."""
    conf = build(name=name, namespace=namespace, servers=servers, service=service,
                 metadata_servers=metadata_servers, fs_name=fs_name, fs_id=fs_id, port=port,
                 distribution=distribution, strip_size=strip_size, num_groups=num_groups,
                 group_strip_factor=group_strip_factor, num_datafiles=num_datafiles,
                 cluster_domain=cluster_domain, addresses=address, storage_root=storage_root, manifest=manifest,
                 file_stuffing=file_stuffing, log_file=log_file, sync_data=sync_data)
    text = render_fs_conf(conf)
    if as_json:
        print_json({
            "fsName": conf.name, "fsId": conf.fs_id, "fileStuffing": conf.file_stuffing,
            "syncData": conf.sync_data,
            "servers": [{"ordinal": s.ordinal, "alias": s.alias, "url": s.url, "metadata": s.metadata}
                        for s in conf.servers],
            "pvfs2tab": render_pvfs2tab(conf, mount_path),
            "fsConf": text,
        })
        return
    print(text, end="")


@render_app.command("pvfs2tab")
def pvfs2tab(
    name: Annotated[str | None, typer.Option("--name", help="OrangeFSCluster name")] = None,
    servers: Annotated[int | None, typer.Option("--servers", help="number of servers (default 4)")] = None,
    service: Annotated[str | None, typer.Option("--service", help="headless Service (default <name>-server)")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="namespace (default 'default')")] = None,
    fs_name: Annotated[str | None, typer.Option("--fs-name", help="file-system name (default orangefs)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="BMI TCP port (default 3334)")] = None,
    cluster_domain: Annotated[str, typer.Option("--cluster-domain",
        help="Kubernetes cluster domain")] = naming.DEFAULT_CLUSTER_DOMAIN,
    address: Annotated[list[str] | None, typer.Option("--address",
        help="HOST:PORT of each server in ordinal order")] = None,
    manifest: Annotated[str | None, typer.Option("--from",
        help="read name, namespace and spec from an OrangeFSCluster manifest")] = None,
    mount_path: Annotated[str, typer.Option("--mount-path",
        help="mount point clients name paths under")] = DEFAULT_MOUNT_PATH,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Print the pvfs2tab line the operator would put into the <name>-pvfs2tab ConfigMap."""
    conf = build(name=name, namespace=namespace, servers=servers, service=service, metadata_servers=None,
                 fs_name=fs_name, fs_id=None, port=port, distribution=None, strip_size=None, num_groups=None,
                 group_strip_factor=None, num_datafiles=None, cluster_domain=cluster_domain,
                 addresses=address, storage_root=None, manifest=manifest)
    text = render_pvfs2tab(conf, mount_path)
    if as_json:
        print_json({"pvfs2tab": text, "uri": conf.pvfs2tab_uri(), "mountPath": mount_path})
        return
    print(text, end="")


@render_app.command("manifests")
def manifests(
    manifest: Annotated[str, typer.Option("--from", help="an OrangeFSCluster manifest")],
    namespace: Annotated[str | None, typer.Option("--namespace",
        help="namespace (default: the manifest's, else 'default')")] = None,
    uid: Annotated[str, typer.Option("--uid",
        help="owner UID written into ownerReferences")] = "00000000-0000-0000-0000-000000000000",
    cluster_domain: Annotated[str, typer.Option("--cluster-domain",
        help="Kubernetes cluster domain")] = naming.DEFAULT_CLUSTER_DOMAIN,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document (a v1 List)")] = False,
) -> None:
    """Print every object the operator would apply for a new OrangeFSCluster, as YAML (or a JSON List)."""
    name, m_ns, raw = _from_manifest(manifest)
    if not name:
        raise InputError("--from", f"{manifest} has an OrangeFSCluster without metadata.name", "give it a name")
    ns = namespace or m_ns or "default"
    spec = parse_spec(raw)
    want = desired_for_new(spec, name, ns, uid, cluster_domain)
    if as_json:
        print_json({"apiVersion": "v1", "kind": "List", "items": list(want.objects)})
        return
    print(examples.dump_objects(list(want.objects)), end="")


@render_app.command("examples")
def render_examples(
    directory: Annotated[str, typer.Option("--dir", help="the example manifests")] = "policies",
    check: Annotated[bool, typer.Option("--check", help="compare only; exit 1 listing what differs")] = False,
) -> None:
    """Write the golden rendering of every example manifest into <dir>/expected/<name>/ (or --check it)."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError("--dir", f"{directory} is not a directory", "run from the repository root or pass --dir")
    if check:
        problems = [p for ex in examples.examples(root) for p in examples.differences(ex)]
        problems += [f"{d}: its example is gone; run `{examples.REGENERATE}`" for d in examples.stale_directories(root)]
        for line in problems:
            print(line)
        raise typer.Exit(1 if problems else 0)
    for path in examples.write_examples(root):
        print(path)


def register(app: typer.Typer) -> None:
    app.add_typer(render_app, name="render")
