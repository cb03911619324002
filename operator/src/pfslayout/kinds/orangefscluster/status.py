"""The status of an OrangeFSCluster and the Events its changes deserve (pure).

Phases: `Pending` (no StatefulSet yet), `Provisioning` (servers starting or rolling), `Ready`,
`Degraded` (was serving and lost servers, or a change was refused), `Failed` (invalid spec),
`Terminating`. Conditions: `Ready`, `ServersAvailable`, `NodesReady` (False naming each node that is not
Ready and the servers on it: a node lost), `SpecApplied`, `ServersSpread` (placement.py;
False when Required spreading keeps servers Pending -- a Warning, but not a phase of its own: the spec
is valid, and the servers that run serve).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pfslayout import naming
from pfslayout.k8s.conditions import Event, EventPolicy, condition, transition_events
from pfslayout.k8s.workloads import (
    STUCK_REASONS,
    Failure,
    pod_failure,
    pod_node,
    pod_ready,
    pods_by_ordinal,
    unschedulable,
)
from pfslayout.kinds.orangefscluster import placement
from pfslayout.kinds.orangefscluster.decisions import Refusal
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology

PHASES = ("Pending", "Provisioning", "Ready", "Degraded", "Failed", "Terminating")

# A False condition warns in a troubled phase, and for these reasons in any phase.
# A server pod stuck on its image (STUCK_REASONS: it cannot be pulled or started) warns too.
EVENT_POLICY = EventPolicy(troubled_phases=frozenset({"Degraded", "Failed"}),
                           warning_reasons=frozenset({"ScaleDownRefused", "ImmutableFieldChanged", "InvalidSpec",
                                                      "NotEnoughNodes", "Unschedulable", "NodeNotReady"})
                           | STUCK_REASONS)

# What to change when a server's image cannot be had: the field, and where a release sets its default.
IMAGE_FIX = ("set spec.image, or the operator's default (the chart's images.orangefs), to an image the nodes "
             "can pull (and spec.imagePullPolicy, or the pods' imagePullSecrets, as the registry needs)")


@dataclass(frozen=True)
class Observed:
    """What the StatefulSet, its pods and the nodes say. `statefulset=None` means it does not exist (yet)."""

    statefulset: dict[str, Any] | None = None
    pods_ready: dict[int, bool] = field(default_factory=dict)
    # A server pod that cannot start by waiting: its image cannot be pulled or started (k8s.workloads).
    stuck: Failure | None = None
    # Where each server pod runs (ordinal -> node; absent while Pending), and the scheduler's message for
    # each it cannot place.
    nodes: dict[int, str] = field(default_factory=dict)
    unschedulable: dict[int, str] = field(default_factory=dict)
    # How many nodes the servers may use (placement.eligible_nodes); None when not looked at.
    eligible_nodes: int | None = None
    # The servers whose node is not Ready (its kubelet silent: stopped, cut off) or gone: ordinal -> node.
    lost: dict[int, str] = field(default_factory=dict)


def observe(statefulset: dict[str, Any] | None, pods: list[dict[str, Any]], statefulset_name: str,
            eligible_nodes: int | None, ready_nodes: frozenset[str] | None = None) -> Observed:
    """Observed from the server StatefulSet, its pods, the count of eligible nodes and the names of the
    Ready nodes (None: not looked at)."""
    if statefulset is None:
        return Observed(None, eligible_nodes=eligible_nodes)
    by_ordinal = pods_by_ordinal(pods, statefulset_name)
    waiting = {i: unschedulable(p) for i, p in by_ordinal.items()}
    nodes = {i: pod_node(p) for i, p in by_ordinal.items() if pod_node(p)}
    lost = {} if ready_nodes is None else {i: n for i, n in nodes.items() if n not in ready_nodes}
    return Observed(statefulset, {i: pod_ready(p) for i, p in by_ordinal.items()}, pod_failure(pods), nodes,
                    {i: why for i, why in waiting.items() if why is not None}, eligible_nodes, lost)


def lost_message(lost: dict[int, str], names: list[str]) -> str:
    """Which nodes are not Ready and the servers on each, e.g. `node w2 is not Ready (server s-1 on it)`."""
    by_node: dict[str, list[str]] = {}
    for i, node in sorted(lost.items()):
        by_node.setdefault(node, []).append(names[i] if i < len(names) else str(i))
    parts = [f"{node} ({'server' if len(s) == 1 else 'servers'} {', '.join(s)} on it)" for node, s in by_node.items()]
    return (f"{'node' if len(parts) == 1 else 'nodes'} {'; '.join(parts)} not Ready: clients of "
            f"{'that server' if len(lost) == 1 else 'those servers'} fail after the client retry budget "
            "until the node is back, and the data on it stays there")


@dataclass(frozen=True)
class Placement:
    """The spreading asked for (`spec.servers.spread`) and in force (decisions.ApplyDecision.spread), and
    the StatefulSet whose pods are placed (its name names them)."""

    requested: str
    spread: str | None
    statefulset: str


def _rollout_done(sts: dict[str, Any], replicas: int) -> bool:
    st = sts.get("status") or {}
    gen = (sts.get("metadata") or {}).get("generation")
    return (gen is None or st.get("observedGeneration", 0) >= gen) \
        and st.get("replicas", 0) == replicas \
        and st.get("updatedReplicas", 0) == replicas \
        and (not st.get("updateRevision") or st.get("currentRevision") == st.get("updateRevision"))


def ready_servers(observed: Observed, topology: Topology) -> int:
    """Ready servers among the ordinals the topology runs (pods of removed ordinals do not count)."""
    if observed.statefulset is None:
        return 0
    if observed.pods_ready:
        return sum(1 for i, ok in observed.pods_ready.items() if ok and i < topology.servers)
    return min(topology.servers, int((observed.statefulset.get("status") or {}).get("readyReplicas", 0) or 0))


def phase_of(topology: Topology, observed: Observed, refusals: tuple[Refusal, ...], previous: str | None,
             error: str | None = None) -> str:
    if error:
        return "Failed"
    if observed.statefulset is None:
        return "Pending"
    ready = ready_servers(observed, topology)
    rolled = _rollout_done(observed.statefulset, topology.servers)
    if ready >= topology.servers and rolled:
        return "Degraded" if refusals else "Ready"
    if rolled and previous in ("Ready", "Degraded"):
        return "Degraded"  # was serving, lost servers without any change of ours in flight
    return "Provisioning"


def endpoints(fs_conf: Any, observed: Observed, mount_path: str, service: str, fs_conf_cm: str,
              pvfs2tab_cm: str) -> dict[str, Any]:
    return {
        "uri": fs_conf.pvfs2tab_uri(),
        "mountPath": mount_path,
        "service": service,
        "fsConfConfigMap": fs_conf_cm,
        "pvfs2tabConfigMap": pvfs2tab_cm,
        "servers": [{"ordinal": s.ordinal, "alias": s.alias, "url": s.url, "metadata": s.metadata,
                     "ready": bool(observed.pods_ready.get(s.ordinal, False))} for s in fs_conf.servers],
    }


def placement_block(spread: str | None, observed: Observed, names: list[str]) -> dict[str, Any]:
    """`status.placement`: the spreading in force, the eligible nodes, and each server's node."""
    out: dict[str, Any] = {}
    if spread:
        out["spread"] = spread
    if observed.eligible_nodes is not None:
        out["eligibleNodes"] = observed.eligible_nodes
    out["servers"] = [{"name": name, "node": observed.nodes.get(i, ""), "ready": bool(observed.pods_ready.get(i))}
                      for i, name in enumerate(names)]
    return out


def compute_status(*, generation: int, topology: Topology, refusals: tuple[Refusal, ...], observed: Observed,
                   previous: dict[str, Any] | None, now: str, fs_id: int | None,
                   endpoint_block: dict[str, Any] | None, error: str | None = None,
                   placed: Placement | None = None) -> dict[str, Any]:
    """`placed`: the placement block and the ServersSpread condition; None for a spec that could not be read."""
    previous = previous or {}
    old_conditions = previous.get("conditions") or []
    phase = phase_of(topology, observed, refusals, previous.get("phase"), error)
    ready = ready_servers(observed, topology)
    names = [naming.server_alias(placed.statefulset if placed else "", i) for i in range(topology.servers)]
    if error:
        ready_reason, ready_msg = "InvalidSpec", error
    elif refusals:
        ready_reason, ready_msg = refusals[0].reason, refusals[0].message
    elif phase == "Ready":
        ready_reason, ready_msg = "AllServersReady", f"{ready}/{topology.servers} servers Ready"
    elif phase == "Pending":
        ready_reason, ready_msg = "Pending", "server StatefulSet not created yet"
    elif observed.lost and phase != "Ready":
        ready_reason = "NodeNotReady"
        ready_msg = f"{ready}/{topology.servers} servers Ready; {lost_message(observed.lost, names)}"
    elif observed.stuck is not None:
        ready_reason = observed.stuck.reason
        ready_msg = f"{ready}/{topology.servers} servers Ready; {observed.stuck.message}: {IMAGE_FIX}"
    elif phase == "Degraded":
        ready_reason, ready_msg = "ServersNotReady", f"{ready}/{topology.servers} servers Ready"
    else:
        ready_reason, ready_msg = "Provisioning", f"{ready}/{topology.servers} servers Ready; rolling out"
    available = observed.statefulset is not None and ready >= topology.servers
    conditions = [
        condition("Ready", phase == "Ready", ready_reason, ready_msg, generation, now, old_conditions),
        condition("ServersAvailable", available, "AllServersReady" if available else "ServersNotReady",
                  f"{ready}/{topology.servers} servers Ready", generation, now, old_conditions),
        # the nodes under the servers: which one failed and what was on it
        condition("NodesReady", not observed.lost, "NodeNotReady" if observed.lost else "NodesReady",
                  lost_message(observed.lost, names) if observed.lost else "every server's node is Ready",
                  generation, now, old_conditions),
        condition("SpecApplied", not refusals and not error,
                  "InvalidSpec" if error else (refusals[0].reason if refusals else "Applied"),
                  error or ("; ".join(r.message for r in refusals) if refusals
                            else "the current spec is applied"), generation, now, old_conditions),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "servers": topology.servers,
        "readyServers": ready,
        "conditions": conditions,
        "observedGeneration": generation,
    }
    if fs_id is not None:
        status["fsId"] = fs_id
    if endpoint_block is not None:
        status["endpoints"] = endpoint_block
    if placed is not None:
        verdict = placement.spread_verdict(placed.requested, placed.spread, names, observed.eligible_nodes,
                                           observed.nodes, observed.unschedulable)
        conditions.append(condition(placement.CONDITION, verdict.ok, verdict.reason, verdict.message, generation,
                                    now, old_conditions))
        status["placement"] = placement_block(placed.spread, observed, names)
    return status


def events(old: dict[str, Any], new: dict[str, Any]) -> list[Event]:
    """The Events that moving from status `old` to `new` deserves (none when nothing changed)."""
    summary = f"{new.get('readyServers', 0)}/{new.get('servers', 0)} servers Ready"
    return transition_events(old, new, EVENT_POLICY, summary)
