"""Everything one reconcile applies, in apply order, from the typed spec and the plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pfslayout.manifests import common as c
from pfslayout.manifests import objects
from pfslayout.manifests.config import fs_conf_for
from pfslayout.manifests.reconcile import Plan
from pfslayout.orangefs import naming
from pfslayout.orangefs.fsconf import FsConf, render_fs_conf
from pfslayout.orangefs.pvfs2tab import render_pvfs2tab


@dataclass(frozen=True)
class Desired:
    fs_conf: FsConf
    fs_conf_text: str
    pvfs2tab_text: str
    objects: tuple[dict[str, Any], ...]  # apply in this order: configs before the pods that mount them
    absent: tuple[tuple[str, str], ...]  # (kind, name) that must not exist (e.g. a disabled client)


def desired(ctx: c.Context, plan: Plan) -> Desired:
    owner = ctx.owner
    conf = fs_conf_for(ctx.spec, owner.name, owner.namespace, plan.topology, cluster_domain=ctx.cluster_domain)
    conf_text = render_fs_conf(conf)
    tab_text = render_pvfs2tab(conf, ctx.spec.client.mount_path)
    objs: list[dict[str, Any]] = [
        objects.fs_conf_configmap(ctx, conf_text),
        objects.pvfs2tab_configmap(ctx, tab_text),
        objects.headless_service(ctx),
        objects.server_statefulset(ctx, plan.topology, conf_text, plan.applied),
    ]
    absent: list[tuple[str, str]] = []
    if ctx.spec.client.enabled:
        objs.append(objects.client_deployment(ctx, tab_text))
    else:
        absent.append(("Deployment", naming.client_deployment(owner.name)))
    return Desired(conf, conf_text, tab_text, tuple(objs), tuple(absent))
