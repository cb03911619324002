"""Where an OrangeFSCluster's servers run (pure): the nodes they may use, how they spread over them
(`spec.servers.spread`), the node each hostPath server is pinned to, and what the `ServersSpread`
condition says about it.

Spreading is pod anti-affinity between the cluster's server pods on `kubernetes.io/hostname`: two servers
on one node share its disk and network, which the cost model counts as two servers. `Auto` becomes
`Required` when enough nodes could take one server each, else `Preferred`; which one is decided in
decisions.py and kept in the applied record, because it is part of the pod template and changing it
restarts every server.

hostPath storage lives on one node, but a StatefulSet has one pod template for all its servers, so the
pin is per-server PersistentVolume: each holds `<path>/<pod name>` with a node affinity, and the scheduler
places the pod that claims it on that node (objects.hostpath_volume).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pfslayout import naming
from pfslayout.k8s import nodes as k8s_nodes
from pfslayout.k8s.meta import Owner, canonical_json, content_hash
from pfslayout.kinds.orangefscluster import meta as m
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec, Spread
from pfslayout.orangefs.handles import MAX_SERVERS

TOPOLOGY_KEY = k8s_nodes.HOSTNAME_LABEL
CONDITION = "ServersSpread"
# What keeps a node from counting, as a user can change it.
NODE_FILTER = "spec.nodeSelector/tolerations"


@dataclass(frozen=True, order=True)
class Node:
    name: str
    hostname: str  # its kubernetes.io/hostname label: the topology key, and what a volume's node affinity matches


def eligible_nodes(spec: OrangeFSClusterSpec, nodes: Sequence[Mapping[str, Any]]) -> list[Node]:
    """The nodes a server pod may be scheduled on by its nodeSelector and tolerations (not cordoned, every
    NoSchedule/NoExecute taint tolerated), sorted by name: the order hostPath servers are placed in."""
    tolerations = [t.as_k8s() for t in spec.tolerations]
    return sorted(Node(str(n["metadata"]["name"]), k8s_nodes.hostname(n)) for n in nodes
                  if k8s_nodes.admits(n, spec.node_selector, tolerations))


def spread_basis(spec: OrangeFSClusterSpec, servers: int) -> str:
    """What a resolved spread depends on: when none of it changes, the resolution stands."""
    return content_hash(canonical_json({"servers": servers, "spread": spec.servers.spread,
                                        "nodeSelector": spec.node_selector,
                                        "tolerations": [t.as_k8s() for t in spec.tolerations]}))


def resolve(requested: str, servers: int, eligible: int | None) -> Spread:
    """`Auto` → `Required` when every server can have a node of its own, else `Preferred`. Nodes not
    known (`pfslayout render`, without a cluster) resolve it to `Preferred`, which never leaves a server
    Pending."""
    if requested == "Preferred":
        return "Preferred"
    if requested == "Required" or (eligible is not None and eligible >= servers):
        return "Required"
    return "Preferred"


# ------------------------------------------------------------------------------------------ hostPath pins

def pinned_nodes(volumes: Sequence[Mapping[str, Any]], owner: Owner) -> dict[int, Node]:
    """The node of each server ordinal whose PersistentVolume exists (never moved: its data is there)."""
    ordinals = {naming.server_volume(owner.namespace, owner.name, i): i for i in range(MAX_SERVERS)}
    out: dict[int, Node] = {}
    for pv in volumes:
        meta = pv.get("metadata") or {}
        i = ordinals.get(meta.get("name", ""))
        if i is None:
            continue
        terms = ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
                 .get("nodeSelectorTerms") or [])
        values = [str(v) for t in terms for e in t.get("matchExpressions") or [] if e.get("key") == TOPOLOGY_KEY
                  for v in e.get("values") or []]
        hostname = values[0] if values else ""
        # the annotation names the node; without it (edited away), its hostname label is the best guess
        node = str((meta.get("annotations") or {}).get(m.NODE_ANNOTATION) or hostname)
        if node:
            out[i] = Node(node, hostname or node)
    return out


def assign_nodes(servers: int, pinned: Mapping[int, Node], eligible: Sequence[Node]) -> dict[int, Node]:
    """A node for every server ordinal: pinned ones keep theirs; each other one takes the eligible node
    holding the fewest servers so far, the first by name among equals -- distinct nodes while there are
    enough, round robin after. No eligible node: the ordinal stays unassigned (its pod waits, and the
    ServersSpread condition says why)."""
    out = {i: n for i, n in pinned.items() if i < servers}
    load: dict[str, int] = defaultdict(int)
    for n in out.values():
        load[n.name] += 1
    for i in range(servers):
        if i in out or not eligible:
            continue
        node = min(eligible, key=lambda n: (load[n.name], n.name))
        out[i] = node
        load[node.name] += 1
    return out


# ------------------------------------------------------------------------------------------- condition

@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    message: str


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def spread_verdict(requested: str, spread: str | None, names: Sequence[str], eligible: int | None,
                   nodes: Mapping[int, str], unschedulable: Mapping[int, str]) -> Verdict:
    """The ServersSpread condition. `names`: the server pods by ordinal; `nodes`: ordinal → node of the
    scheduled ones; `unschedulable`: ordinal → the scheduler's message for the ones it cannot place.

    False only under Required, where a server that found no node of its own stays Pending: too few
    eligible nodes (`NotEnoughNodes`), or the scheduler's refusal (`Unschedulable`). Under Preferred the
    servers always run, sharing nodes when they must (`SharedNodes`, True)."""
    servers = len(names)
    waiting = [i for i in range(servers) if not nodes.get(i)]
    fix = "set servers.spread to Preferred" + ("" if requested == "Auto" else " (or Auto)")
    said = "Required" if requested == "Required" else f"{requested} (resolved to Required when the servers were placed)"
    if spread == "Required" and waiting and eligible is not None and eligible < servers:
        return Verdict(False, "NotEnoughNodes",
                       f"servers.spread is {said}: {servers} servers need {servers} distinct nodes, "
                       f"{_count(eligible, 'node')} {'matches' if eligible == 1 else 'match'} {NODE_FILTER}; "
                       f"{fix}, or add nodes")
    stuck = [i for i in waiting if i in unschedulable]
    if spread == "Required" and stuck:
        pods = ", ".join(names[i] for i in stuck)
        return Verdict(False, "Unschedulable",
                       f"servers.spread is {said}: {pods} cannot be scheduled ({unschedulable[stuck[0]]}); "
                       f"{fix}, or free or add nodes")
    by_node: dict[str, list[str]] = defaultdict(list)
    for i in range(servers):
        if nodes.get(i):
            by_node[nodes[i]].append(names[i])
    pending = f"; {len(waiting)} not scheduled yet" if waiting else ""
    shared = {node: pods for node, pods in sorted(by_node.items()) if len(pods) > 1}
    if shared:
        where = "; ".join(f"{node}: {', '.join(pods)}" for node, pods in shared.items())
        return Verdict(True, "SharedNodes", f"{_count(servers - len(waiting), 'server')} on "
                       f"{_count(len(by_node), 'node')}, sharing {where}{pending}")
    return Verdict(True, "Distinct", f"{_count(len(by_node), 'server')} on {_count(len(by_node), 'distinct node')}"
                   f"{pending}")
