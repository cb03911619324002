"""What one OrangeFSCluster reconcile applies, or refuses and why (pure).

`decide` takes the spec and what is running (the `applied` record the operator keeps on the
StatefulSet) and returns an `ApplyDecision`; `status.compute_status` turns what is then observed into
the status block. The reconciler only fetches, calls these, and writes.

What OrangeFS cannot change live:
* fs name, fs ID, TCP port, storage type -- refused by CEL on the CRD; re-checked here against the
  applied record (reason `ImmutableFieldChanged`) in case the CRD in the cluster is older.
* fewer servers, or fewer metadata servers -- every file striped over a removed server loses data
  (OrangeFS has no migration tool). Refused (reason `ScaleDownRefused`) until the object carries the
  annotation `pfslayout.io/confirm-scale-down: "<new servers.count>"`, i.e. consent for exactly that
  count. Claims of removed servers follow `reclaimPolicy`.
* more servers, more metadata servers, distribution, image, resources, client: safe. Handle ranges
  come from fixed per-ordinal slots, so old ranges never move; the new fs.conf rolls the servers.

A refused change applies nothing of the new spec ("never half way"): the objects stay as they are and
the `SpecApplied` and `Ready` conditions say why.

Placement (placement.py) is recorded too, because it is part of the pod template and changing it restarts
every server: `spread` is `servers.spread` with `Auto` resolved against the eligible nodes when the
StatefulSet is made, and again only when what it was resolved for (`spreadBasis`: servers.count,
servers.spread, nodeSelector, tolerations) changes -- a node lost later must not restart the servers,
least of all to move them. `hostPathVolumes` marks hostPath storage pinned by PersistentVolumes.
A record from an operator that predates these keys keeps its servers where they are: no spreading, and
hostPath keeps its inline volume (a StatefulSet's volumeClaimTemplates cannot change), so such a
hostPath cluster is never spread (a moved server would leave its data behind).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pfslayout.kinds.orangefscluster import placement
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology, fs_id_for
from pfslayout.kinds.orangefscluster.meta import APPLIED_ANNOTATION, CONFIRM_SCALE_DOWN_ANNOTATION
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec

SPREAD, SPREAD_BASIS, HOSTPATH_VOLUMES = "spread", "spreadBasis", "hostPathVolumes"


@dataclass(frozen=True)
class Refusal:
    reason: str
    message: str


@dataclass(frozen=True)
class ApplyDecision:
    """The topology to run and the applied record to stamp; with refusals, what runs stays as it is."""

    topology: Topology
    applied: dict[str, Any]
    refusals: tuple[Refusal, ...] = ()

    @property
    def apply(self) -> bool:
        return not self.refusals

    @property
    def spread(self) -> str | None:
        """`Required` or `Preferred`; None: the servers are not spread (placed by an older operator)."""
        value = self.applied.get(SPREAD)
        return str(value) if value else None

    @property
    def hostpath_volumes(self) -> bool:
        """hostPath storage through one pinned PersistentVolume per server (else inline, or not hostPath)."""
        return bool(self.applied.get(HOSTPATH_VOLUMES))


def applied_record(spec: OrangeFSClusterSpec, namespace: str, name: str, topology: Topology,
                   generation: int | None = None) -> dict[str, Any]:
    """What the operator stamps on the StatefulSet: the facts later changes are checked against, and
    the generation of the spec they came from."""
    out: dict[str, Any] = {"servers": topology.servers, "metadataServers": topology.metadata_servers,
                           "fsName": spec.fs.name, "fsId": fs_id_for(spec, namespace, name),
                           "port": spec.ports.tcp, "storageType": spec.storage.type}
    if generation is not None:
        out["generation"] = generation
    return out


def placement_record(spec: OrangeFSClusterSpec, servers: int, applied: dict[str, Any] | None,
                     eligible_nodes: int | None) -> dict[str, Any]:
    """The placement keys of the applied record: resolved anew for a new StatefulSet or a changed basis,
    else those in force (see the module's docstring)."""
    basis = placement.spread_basis(spec, servers)
    out: dict[str, Any] = {SPREAD_BASIS: basis}
    hostpath = spec.storage.type == "hostPath"
    if hostpath and (applied is None or applied.get(HOSTPATH_VOLUMES)):
        out[HOSTPATH_VOLUMES] = True
    inline_hostpath = hostpath and not out.get(HOSTPATH_VOLUMES)
    if applied is not None and (applied.get(SPREAD_BASIS) in (None, basis) or inline_hostpath):
        spread = applied.get(SPREAD)
    else:
        spread = placement.resolve(spec.servers.spread, servers, eligible_nodes)
    if spread:
        out[SPREAD] = spread
    return out


def read_applied(statefulset: dict[str, Any] | None) -> dict[str, Any] | None:
    if not statefulset:
        return None
    raw = ((statefulset.get("metadata") or {}).get("annotations") or {}).get(APPLIED_ANNOTATION)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def decide(spec: OrangeFSClusterSpec, namespace: str, name: str, applied: dict[str, Any] | None,
           annotations: dict[str, str] | None = None, generation: int | None = None,
           eligible_nodes: int | None = None) -> ApplyDecision:
    """`eligible_nodes`: how many nodes the servers may use (placement.eligible_nodes), None when not
    known; it matters only where `Auto` is resolved."""
    wanted = Topology.of(spec)
    record = {**applied_record(spec, namespace, name, wanted, generation),
              **placement_record(spec, wanted.servers, applied, eligible_nodes)}
    if applied is None:
        return ApplyDecision(wanted, record)
    refusals: list[Refusal] = []
    for key, field_path in (("fsName", "spec.fs.name"), ("fsId", "spec.fs.id"), ("port", "spec.ports.tcp"),
                            ("storageType", "spec.storage.type")):
        if key in applied and applied[key] != record[key]:
            refusals.append(Refusal("ImmutableFieldChanged",
                                    f"{field_path}: cannot change from {applied[key]!r} to {record[key]!r} on a "
                                    "live file system; restore it, or create a new OrangeFSCluster"))
    running = Topology(int(applied.get("servers", wanted.servers)),
                       int(applied.get("metadataServers", wanted.metadata_servers)))
    shrinking = wanted.servers < running.servers or wanted.metadata_servers < running.metadata_servers
    if shrinking:
        consent = (annotations or {}).get(CONFIRM_SCALE_DOWN_ANNOTATION)
        if consent != str(wanted.servers):
            what = []
            if wanted.servers < running.servers:
                what.append(f"servers {running.servers} -> {wanted.servers}")
            if wanted.metadata_servers < running.metadata_servers:
                what.append(f"metadata servers {running.metadata_servers} -> {wanted.metadata_servers}")
            refusals.append(Refusal(
                "ScaleDownRefused",
                f"spec.servers: scaling down ({', '.join(what)}) loses every file striped over the removed "
                f"servers; still running {running.servers} servers. To accept the loss, annotate the object "
                f"{CONFIRM_SCALE_DOWN_ANNOTATION}={wanted.servers}, or restore spec.servers"))
    if refusals:
        kept = dict(applied)
        return ApplyDecision(running, kept, tuple(refusals))
    return ApplyDecision(wanted, record)
