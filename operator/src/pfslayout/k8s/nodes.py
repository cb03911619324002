"""Which nodes a pod may be scheduled on, read from the Node objects the way the scheduler reads them (pure).

Only the filters that a pod's own `nodeSelector` and `tolerations` decide: node labels, taints with the
effects that keep a pod off a node (`NoSchedule`, `NoExecute`; `PreferNoSchedule` only lowers a score),
and a cordoned node (`spec.unschedulable`), which the scheduler's NodeUnschedulable filter treats as the
taint `node.kubernetes.io/unschedulable:NoSchedule`. Resources, affinity and volumes are left to the
scheduler: this answers "how many nodes could hold one server each", not "will this pod fit now".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HOSTNAME_LABEL = "kubernetes.io/hostname"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' `Toleration.ToleratesTaint`: an empty effect matches every effect, an empty key (with
    `Exists`) every key; `Exists` ignores the value, `Equal` (the default) compares it."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def blocking_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The taints that keep a pod off `node` unless it tolerates them, a cordon among them."""
    spec = node.get("spec") or {}
    taints = [dict(t) for t in spec.get("taints") or [] if t.get("effect") in BLOCKING_EFFECTS]
    if spec.get("unschedulable"):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    return taints


def admits(node: Mapping[str, Any], node_selector: Mapping[str, str],
           tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a pod with this `nodeSelector` and these `tolerations` may be placed on `node`."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    return all(any(tolerates(t, taint) for t in tolerations) for taint in blocking_taints(node))


def hostname(node: Mapping[str, Any]) -> str:
    """The node's `kubernetes.io/hostname` label (the anti-affinity topology key, and what a volume's node
    affinity is matched against), which the kubelet may set to something else than the node's name."""
    meta = node.get("metadata") or {}
    return str((meta.get("labels") or {}).get(HOSTNAME_LABEL) or meta.get("name") or "")


def ready(node: Mapping[str, Any]) -> bool:
    """Whether the node's kubelet reports it Ready (its `Ready` condition True). A node the kubelet stopped
    reporting turns `Unknown` after the node controller's grace period (40-50 s)."""
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
