"""From a typed spec (plus the topology actually applied) to the FsConf both the operator and
`pfslayout render fs-conf` render -- one function, so the two cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from pfslayout import naming
from pfslayout.errors import InputError
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.orangefs.fsconf import Distribution, FsConf, ServerEntry


@dataclass(frozen=True)
class Topology:
    """What the operator runs: may lag the spec while a change is refused (e.g. an unconfirmed
    scale-down keeps the old count until confirmed)."""

    servers: int
    metadata_servers: int

    @classmethod
    def of(cls, spec: OrangeFSClusterSpec) -> Topology:
        return cls(spec.servers.count, spec.servers.effective_metadata_count)


@dataclass(frozen=True)
class Address:
    """An explicit `host:port` for one server, replacing its pod DNS name (loopback tests, or servers
    outside Kubernetes)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str, what: str = "--address") -> Address:
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise InputError(what, f"{text!r} is not HOST:PORT", "write e.g. 127.0.0.1:3334")
        return cls(host, int(port))


def fs_id_for(spec: OrangeFSClusterSpec, namespace: str, name: str) -> int:
    return spec.fs.id if spec.fs.id is not None else naming.derive_fs_id(namespace, name)


def server_entries(spec: OrangeFSClusterSpec, name: str, namespace: str, topology: Topology, *,
                   service: str | None = None, cluster_domain: str = naming.DEFAULT_CLUSTER_DOMAIN,
                   addresses: list[Address] | None = None, storage_root: str | None = None
                   ) -> tuple[ServerEntry, ...]:
    sts = naming.server_statefulset(name)
    svc = service or naming.server_service(name)
    if addresses is not None and len(addresses) != topology.servers:
        raise InputError("--address", f"{len(addresses)} addresses for {topology.servers} servers",
                         "give one --address per server, in ordinal order")
    out = []
    for i in range(topology.servers):
        alias = naming.server_alias(sts, i)
        if addresses is not None:
            host, port = addresses[i].host, addresses[i].port
        else:
            host, port = naming.server_host(sts, i, svc, namespace, cluster_domain), spec.ports.tcp
        per_server = {}
        if storage_root is not None:
            # Servers sharing one host need their own storage spaces: <root>/<alias>/{data,meta}. The log
            # is each process's stderr, as in the pods.
            base = f"{storage_root.rstrip('/')}/{alias}"
            per_server = {"data_storage": f"{base}/data", "meta_storage": f"{base}/meta"}
        out.append(ServerEntry(ordinal=i, alias=alias, host=host, port=port,
                               metadata=i < topology.metadata_servers, **per_server))
    return tuple(out)


def fs_conf_for(spec: OrangeFSClusterSpec, name: str, namespace: str, topology: Topology | None = None,
                log_file: str | None = None, **kwargs: object) -> FsConf:
    """The FsConf of an OrangeFSCluster; ``log_file`` replaces the default LogFile (servers on one host
    that should keep a log file each, e.g. the performance lab; the pods log to stderr)."""
    topology = topology or Topology.of(spec)
    d = spec.distribution
    return FsConf(
        name=spec.fs.name,
        fs_id=fs_id_for(spec, namespace, name),
        servers=server_entries(spec, name, namespace, topology, **kwargs),  # type: ignore[arg-type]
        distribution=Distribution(name=d.name, strip_size=d.strip_size, num_groups=d.num_groups,
                                  group_strip_factor=d.group_strip_factor),
        default_num_dfiles=d.num_datafiles,
        stuffing=spec.fs.file_stuffing,
        sync_data=spec.fs.sync_data,
        **({"log_file": log_file} if log_file else {}),
    )
