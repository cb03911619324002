"""Everything one reconcile applies, in apply order, from the typed spec and the apply decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pfslayout import naming
from pfslayout.kinds.orangefscluster import objects
from pfslayout.kinds.orangefscluster.decisions import ApplyDecision, decide
from pfslayout.kinds.orangefscluster.fsconf_from_spec import fs_conf_for
from pfslayout.kinds.orangefscluster.meta import BuildInputs, owner
from pfslayout.kinds.orangefscluster.placement import Node
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.orangefs.fsconf import FsConf, render_fs_conf
from pfslayout.orangefs.pvfs2tab import render_pvfs2tab


@dataclass(frozen=True)
class Desired:
    fs_conf: FsConf
    fs_conf_text: str
    pvfs2tab_text: str
    objects: tuple[dict[str, Any], ...]  # apply in this order: configs before the pods that mount them
    absent: tuple[tuple[str, str], ...]  # (kind, name) that must not exist (e.g. a disabled client)


def desired(ctx: BuildInputs, decision: ApplyDecision, new_volumes: Mapping[int, Node] | None = None) -> Desired:
    """`new_volumes`: the hostPath servers' PersistentVolumes to create, ordinal -> node
    (placement.assign_nodes less the volumes there are). An existing volume is never applied again: the
    PV controller writes the claim's uid into its `claimRef`, which server-side apply replaces whole (an
    atomic struct), so applying it again would unbind the claim; nor can its path or node change."""
    owner = ctx.owner
    conf = fs_conf_for(ctx.spec, owner.name, owner.namespace, decision.topology, cluster_domain=ctx.cluster_domain)
    conf_text = render_fs_conf(conf)
    tab_text = render_pvfs2tab(conf, ctx.spec.client.mount_path)
    objs: list[dict[str, Any]] = [
        objects.fs_conf_configmap(ctx, conf_text),
        objects.pvfs2tab_configmap(ctx, tab_text),
        objects.headless_service(ctx),
    ]
    if decision.hostpath_volumes:
        # Before the StatefulSet: its claims find their volumes waiting.
        objs += [objects.hostpath_volume(ctx, i, node) for i, node in sorted((new_volumes or {}).items())
                 if i < decision.topology.servers]
    objs.append(objects.server_statefulset(ctx, decision, conf_text))
    absent: list[tuple[str, str]] = []
    if ctx.spec.client.enabled:
        objs.append(objects.client_deployment(ctx, tab_text))
    else:
        absent.append(("Deployment", naming.client_deployment(owner.name)))
    return Desired(conf, conf_text, tab_text, tuple(objs), tuple(absent))


def desired_for_new(spec: OrangeFSClusterSpec, name: str, namespace: str, uid: str,
                    cluster_domain: str = naming.DEFAULT_CLUSTER_DOMAIN) -> Desired:
    """What the first reconcile of a new OrangeFSCluster applies (`pfslayout render manifests|examples`).
    No nodes are known here: `servers.spread: Auto` renders as Preferred (placement.resolve), and hostPath
    storage without its PersistentVolumes, whose nodes the operator picks from the cluster's."""
    return desired(BuildInputs(spec, owner(name, namespace, uid), cluster_domain), decide(spec, namespace, name, None))
