"""Everything one reconcile applies, in apply order, from the typed spec and the apply decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pfslayout import naming
from pfslayout.kinds.orangefscluster import objects
from pfslayout.kinds.orangefscluster.decisions import ApplyDecision, decide
from pfslayout.kinds.orangefscluster.fsconf_from_spec import fs_conf_for
from pfslayout.kinds.orangefscluster.meta import BuildInputs, owner
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


def desired(ctx: BuildInputs, decision: ApplyDecision) -> Desired:
    owner = ctx.owner
    conf = fs_conf_for(ctx.spec, owner.name, owner.namespace, decision.topology, cluster_domain=ctx.cluster_domain)
    conf_text = render_fs_conf(conf)
    tab_text = render_pvfs2tab(conf, ctx.spec.client.mount_path)
    objs: list[dict[str, Any]] = [
        objects.fs_conf_configmap(ctx, conf_text),
        objects.pvfs2tab_configmap(ctx, tab_text),
        objects.headless_service(ctx),
        objects.server_statefulset(ctx, decision.topology, conf_text, decision.applied),
    ]
    absent: list[tuple[str, str]] = []
    if ctx.spec.client.enabled:
        objs.append(objects.client_deployment(ctx, tab_text))
    else:
        absent.append(("Deployment", naming.client_deployment(owner.name)))
    return Desired(conf, conf_text, tab_text, tuple(objs), tuple(absent))


def desired_for_new(spec: OrangeFSClusterSpec, name: str, namespace: str, uid: str,
                    cluster_domain: str = naming.DEFAULT_CLUSTER_DOMAIN) -> Desired:
    """What the first reconcile of a new OrangeFSCluster applies (`pfslayout render manifests|examples`)."""
    return desired(BuildInputs(spec, owner(name, namespace, uid), cluster_domain), decide(spec, namespace, name, None))
