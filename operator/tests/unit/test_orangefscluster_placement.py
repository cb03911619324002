"""Where an OrangeFSCluster's servers run (kinds/orangefscluster/placement.py, k8s/nodes.py): the nodes they
may use, `servers.spread` resolved and kept, the hostPath servers' nodes, and the ServersSpread condition
and status.placement they produce."""

from __future__ import annotations

from typing import Any

import pytest

from pfslayout.k8s.nodes import admits, tolerates
from pfslayout.kinds.orangefscluster import meta as c
from pfslayout.kinds.orangefscluster import placement
from pfslayout.kinds.orangefscluster.decisions import applied_record, decide
from pfslayout.kinds.orangefscluster.fsconf_from_spec import Topology
from pfslayout.kinds.orangefscluster.objects import hostpath_volume
from pfslayout.kinds.orangefscluster.placement import Node, assign_nodes, eligible_nodes, pinned_nodes, spread_verdict
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.kinds.orangefscluster.status import Observed, Placement, compute_status, events, observe

NS, NAME = "lab", "demo"
OWNER = c.owner(NAME, NS, "uid-1")
T0 = "2026-01-01T00:00:00Z"


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         cordoned: bool = False, hostname: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": taints or []}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": hostname or name, **(labels or {})}},
            "spec": spec}


def spec(count: int = 4, spread: str | None = None, **over: Any) -> Any:
    servers: dict[str, Any] = {"count": count}
    if spread:
        servers["spread"] = spread
    return parse_spec({"servers": servers, "storage": {"type": "emptyDir"}, **over})


# ------------------------------------------------------------------------------------- eligible nodes

@pytest.mark.parametrize(("toleration", "taint", "ok"), [
    ({"key": "hpc", "operator": "Exists"}, {"key": "hpc", "value": "x", "effect": "NoSchedule"}, True),
    ({"key": "hpc", "operator": "Equal", "value": "x"}, {"key": "hpc", "value": "x", "effect": "NoExecute"}, True),
    ({"key": "hpc", "value": "x"}, {"key": "hpc", "value": "x", "effect": "NoSchedule"}, True),  # Equal by default
    ({"key": "hpc", "operator": "Equal", "value": "y"}, {"key": "hpc", "value": "x", "effect": "NoSchedule"}, False),
    ({"key": "hpc", "operator": "Equal"}, {"key": "hpc", "value": "x", "effect": "NoSchedule"}, False),
    ({"key": "other", "operator": "Exists"}, {"key": "hpc", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, {"key": "anything", "value": "v", "effect": "NoExecute"}, True),  # empty key: all
    ({"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}, {"key": "hpc", "effect": "NoSchedule"}, True),
    ({"key": "hpc", "operator": "Exists", "effect": "NoSchedule"}, {"key": "hpc", "effect": "NoExecute"}, False),
    ({"key": "hpc", "operator": "Exists", "effect": ""}, {"key": "hpc", "effect": "NoExecute"}, True),
])
def test_toleration_matching_is_kubernetes(toleration: dict[str, str], taint: dict[str, str], ok: bool) -> None:
    assert tolerates(toleration, taint) is ok


def test_eligible_nodes_match_the_selector_and_tolerate_every_blocking_taint() -> None:
    nodes = [
        node("n3", {"disk": "nvme"}),
        node("n1", {"disk": "nvme"}, hostname="n1.example.org"),
        node("ssd", {"disk": "ssd"}),  # wrong label
        node("bare"),  # no label
        node("gpu", {"disk": "nvme"}, [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
        node("soft", {"disk": "nvme"}, [{"key": "gpu", "value": "true", "effect": "PreferNoSchedule"}]),
        node("evict", {"disk": "nvme"}, [{"key": "maint", "effect": "NoExecute"}]),
        node("cordoned", {"disk": "nvme"}, cordoned=True),
    ]
    s = spec(nodeSelector={"disk": "nvme"})
    # sorted by name; PreferNoSchedule only lowers a score; the hostname label is the topology key
    assert eligible_nodes(s, nodes) == [Node("n1", "n1.example.org"), Node("n3", "n3"), Node("soft", "soft")]
    tolerant = spec(nodeSelector={"disk": "nvme"}, tolerations=[
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "maint", "operator": "Exists"}])
    assert [n.name for n in eligible_nodes(tolerant, nodes)] == ["evict", "gpu", "n1", "n3", "soft"]
    # a cordon is the taint node.kubernetes.io/unschedulable:NoSchedule to the scheduler: tolerating it
    # (an empty key with Exists tolerates everything) admits a cordoned node
    everything = spec(tolerations=[{"operator": "Exists"}])
    assert len(eligible_nodes(everything, nodes)) == len(nodes)
    assert not admits(node("c", cordoned=True), {}, [{"key": "other", "operator": "Exists"}])


def test_auto_resolves_to_required_only_with_a_node_for_every_server() -> None:
    assert placement.resolve("Auto", 4, 4) == "Required"
    assert placement.resolve("Auto", 4, 5) == "Required"
    assert placement.resolve("Auto", 4, 3) == "Preferred"
    assert placement.resolve("Auto", 4, None) == "Preferred"  # nodes not known (pfslayout render)
    assert placement.resolve("Required", 4, 1) == "Required"
    assert placement.resolve("Preferred", 4, 9) == "Preferred"


# ------------------------------------------------------------------------------------------ stickiness

def test_auto_is_resolved_for_a_new_statefulset_and_then_kept_when_nodes_go() -> None:
    first = decide(spec(4), NS, NAME, None, eligible_nodes=4)
    assert first.spread == "Required" and first.applied["spread"] == "Required"
    # a node lost (or cordoned) later changes nothing: no new pod template, no restart of every server
    later = decide(spec(4), NS, NAME, first.applied, eligible_nodes=2)
    assert later.spread == "Required" and later.applied == first.applied
    more = decide(spec(4), NS, NAME, later.applied, eligible_nodes=9)
    assert more.applied == first.applied


@pytest.mark.parametrize("change", [
    {"servers": {"count": 5}},
    {"servers": {"count": 4, "spread": "Preferred"}},
    {"nodeSelector": {"disk": "nvme"}},
    {"tolerations": [{"key": "hpc", "operator": "Exists"}]},
])
def test_auto_is_resolved_again_when_what_it_depends_on_changes(change: dict[str, Any]) -> None:
    first = decide(spec(4), NS, NAME, None, eligible_nodes=4)
    raw = {"servers": {"count": 4}, "storage": {"type": "emptyDir"}, **change}
    again = decide(parse_spec(raw), NS, NAME, first.applied, eligible_nodes=2)
    assert again.spread == "Preferred" and again.applied["spreadBasis"] != first.applied["spreadBasis"]


def test_explicit_spread_is_kept_as_asked_whatever_the_nodes() -> None:
    assert decide(spec(4, "Required"), NS, NAME, None, eligible_nodes=1).spread == "Required"
    assert decide(spec(4, "Preferred"), NS, NAME, None, eligible_nodes=9).spread == "Preferred"


def test_servers_placed_by_an_older_operator_are_not_moved_until_the_placement_inputs_change() -> None:
    old = applied_record(spec(4), NS, NAME, Topology(4, 4))  # no spread, no spreadBasis
    kept = decide(spec(4), NS, NAME, old, eligible_nodes=8)
    assert kept.spread is None and "spread" not in kept.applied
    assert kept.applied["spreadBasis"] == placement.spread_basis(spec(4), 4)  # stamped, the template unchanged
    assert decide(spec(4), NS, NAME, kept.applied, eligible_nodes=8).spread is None
    assert decide(spec(6), NS, NAME, kept.applied, eligible_nodes=8).spread == "Required"


def test_an_inline_hostpath_cluster_is_never_spread() -> None:
    raw = {"servers": {"count": 2}, "storage": {"type": "hostPath", "hostPath": {"path": "/d"}}}
    s = parse_spec(raw)
    old = applied_record(s, NS, NAME, Topology(2, 2))
    moved = decide(parse_spec({**raw, "servers": {"count": 3, "spread": "Required"}}), NS, NAME, old,
                   eligible_nodes=8)
    assert moved.apply and moved.spread is None and not moved.hostpath_volumes
    new = decide(s, NS, NAME, None, eligible_nodes=8)
    assert new.hostpath_volumes and new.spread == "Required"
    assert decide(s, NS, NAME, new.applied, eligible_nodes=8).hostpath_volumes  # kept


def test_a_refused_change_keeps_the_placement_in_force() -> None:
    first = decide(spec(4), NS, NAME, None, eligible_nodes=4)
    refused = decide(spec(2, nodeSelector={"disk": "nvme"}), NS, NAME, first.applied, eligible_nodes=0)
    assert not refused.apply and refused.spread == "Required" and refused.applied == first.applied


# ------------------------------------------------------------------------------------- hostPath nodes

A, B, C = Node("a", "host-a"), Node("b", "host-b"), Node("c", "host-c")


def test_new_servers_take_distinct_nodes_in_name_order_then_round_robin() -> None:
    assert assign_nodes(3, {}, [C, A, B]) == {0: A, 1: B, 2: C}
    assert assign_nodes(5, {}, [A, B]) == {0: A, 1: B, 2: A, 3: B, 4: A}
    assert assign_nodes(2, {}, []) == {}  # no node: no volume, the server waits


def test_a_server_with_a_volume_keeps_its_node_and_new_ones_avoid_the_busy_nodes() -> None:
    pinned = {0: B, 1: B, 7: A}  # 7: a server of an earlier scale-down, not of this topology
    assert assign_nodes(4, pinned, [A, B, C]) == {0: B, 1: B, 2: A, 3: C}
    gone = Node("lost", "lost")  # no longer eligible, or gone: the server stays with its data
    assert assign_nodes(2, {0: gone}, [A]) == {0: gone, 1: A}


def test_pinned_nodes_are_read_back_from_the_volumes() -> None:
    ctx = c.BuildInputs(parse_spec({"storage": {"type": "hostPath", "hostPath": {"path": "/d"}}}), OWNER)
    volumes = [hostpath_volume(ctx, 0, A), hostpath_volume(ctx, 3, Node("n-long-name", "n"))]
    stranger = hostpath_volume(c.BuildInputs(ctx.spec, c.owner(NAME, "other", "u")), 1, B)
    assert pinned_nodes([*volumes, stranger], OWNER) == {0: A, 3: Node("n-long-name", "n")}
    del volumes[1]["metadata"]["annotations"]  # edited away: the node affinity's hostname still pins it
    assert pinned_nodes(volumes, OWNER)[3] == Node("n", "n")


# ---------------------------------------------------------------------------------- ServersSpread

NAMES = [f"demo-server-{i}" for i in range(4)]


def test_required_over_more_servers_than_nodes_names_the_field_and_the_fix() -> None:
    v = spread_verdict("Required", "Required", NAMES, 3, {0: "a", 1: "b", 2: "c"}, {3: "0/3 nodes are available"})
    assert (v.ok, v.reason) == (False, "NotEnoughNodes")
    assert v.message == ("servers.spread is Required: 4 servers need 4 distinct nodes, 3 nodes match "
                         "spec.nodeSelector/tolerations; set servers.spread to Preferred (or Auto), or add nodes")
    before = spread_verdict("Required", "Required", NAMES, 1, {}, {})  # no pod yet: said at once
    assert before.reason == "NotEnoughNodes" and "1 node matches" in before.message
    auto = spread_verdict("Auto", "Required", NAMES, 3, {0: "a", 1: "b", 2: "c"}, {})
    assert auto.reason == "NotEnoughNodes"
    assert auto.message.startswith("servers.spread is Auto (resolved to Required when the servers were placed)")
    assert "(or Auto)" not in auto.message


def test_a_server_the_scheduler_cannot_place_under_required_is_unschedulable() -> None:
    why = "0/5 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 4 Insufficient memory"
    v = spread_verdict("Required", "Required", NAMES, 5, {0: "a", 1: "b", 2: "c"}, {3: why})
    assert (v.ok, v.reason) == (False, "Unschedulable")
    assert v.message == (f"servers.spread is Required: demo-server-3 cannot be scheduled ({why}); set "
                         "servers.spread to Preferred (or Auto), or free or add nodes")
    # Preferred never keeps a server off a node for spreading's sake: not this condition's business
    assert spread_verdict("Preferred", "Preferred", NAMES, 5, {0: "a"}, {3: why}).ok


def test_scheduled_servers_on_distinct_or_shared_nodes() -> None:
    v = spread_verdict("Auto", "Required", NAMES, 4, {0: "a", 1: "b", 2: "c", 3: "d"}, {})
    assert (v.ok, v.reason, v.message) == (True, "Distinct", "4 servers on 4 distinct nodes")
    v = spread_verdict("Auto", "Preferred", NAMES, 2, {0: "a", 1: "b", 2: "a", 3: "b"}, {})
    assert (v.ok, v.reason) == (True, "SharedNodes")
    assert v.message == "4 servers on 2 nodes, sharing a: demo-server-0, demo-server-2; b: demo-server-1, demo-server-3"
    v = spread_verdict("Auto", "Preferred", NAMES, 4, {0: "a", 1: "b"}, {})
    assert v.message == "2 servers on 2 distinct nodes; 2 not scheduled yet"


def pod(i: int, node_name: str = "", ready: bool = False, unschedulable: str = "") -> dict[str, Any]:
    conds = [{"type": "Ready", "status": str(ready)}]
    if unschedulable:
        conds.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable})
    return {"metadata": {"name": f"demo-server-{i}"}, "spec": {"nodeName": node_name} if node_name else {},
            "status": {"conditions": conds}}


STS = {"metadata": {"name": "demo-server", "generation": 1}, "spec": {"replicas": 4},
       "status": {"replicas": 4, "readyReplicas": 3, "observedGeneration": 1, "updatedReplicas": 4}}


def test_observe_reads_each_server_pods_node_and_why_it_waits() -> None:
    obs = observe(STS, [pod(0, "a", True), pod(1, "b", True), pod(2, "c", True), pod(3, unschedulable="full"),
                        pod(9, "z", True)], "demo-server", 3)
    assert obs.nodes == {0: "a", 1: "b", 2: "c", 9: "z"}
    assert obs.unschedulable == {3: "full"} and obs.eligible_nodes == 3
    assert obs.pods_ready == {0: True, 1: True, 2: True, 3: False, 9: True}
    assert observe(None, [], "demo-server", 3) == Observed(None, eligible_nodes=3)


def status_of(observed: Observed, requested: str, spread: str | None, previous: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    return compute_status(generation=2, topology=Topology(4, 4), refusals=(), observed=observed, previous=previous,
                          now=T0, fs_id=7, endpoint_block=None, placed=Placement(requested, spread, "demo-server"))


def test_status_lists_each_servers_node_and_a_false_condition_warns_without_failing_the_phase() -> None:
    observed = observe(STS, [pod(0, "a", True), pod(1, "b", True), pod(2, "c", True), pod(3, unschedulable="full")],
                       "demo-server", 3)
    first = status_of(Observed(STS, eligible_nodes=3), "Required", "Required")
    st = status_of(observed, "Required", "Required", previous=first)
    assert st["placement"] == {"spread": "Required", "eligibleNodes": 3, "servers": [
        {"name": "demo-server-0", "node": "a", "ready": True}, {"name": "demo-server-1", "node": "b", "ready": True},
        {"name": "demo-server-2", "node": "c", "ready": True}, {"name": "demo-server-3", "node": "", "ready": False}]}
    cond = next(x for x in st["conditions"] if x["type"] == "ServersSpread")
    assert (cond["status"], cond["reason"], cond["observedGeneration"]) == ("False", "NotEnoughNodes", 2)
    assert st["phase"] == "Provisioning"  # a valid spec: never Failed; partly Pending is still provisioning
    warned = [e for e in events({}, st) if e.reason == "NotEnoughNodes"]
    assert [e.type for e in warned] == ["Warning"] and "servers.spread" in warned[0].message
    # all placed after nodes were added: True, a Normal Event
    placed = observe(STS, [pod(i, n, True) for i, n in enumerate("abcd")], "demo-server", 4)
    done = status_of(placed, "Required", "Required", previous=st)
    cond = next(x for x in done["conditions"] if x["type"] == "ServersSpread")
    assert (cond["status"], cond["reason"]) == ("True", "Distinct")
    assert [e.type for e in events(st, done) if e.reason == "Distinct"] == ["Normal"]


def test_servers_not_spread_show_no_spread_in_the_status() -> None:
    st = status_of(observe(STS, [pod(0, "a", True), pod(1, "a", True)], "demo-server", 1), "Auto", None)
    assert "spread" not in st["placement"] and st["placement"]["eligibleNodes"] == 1
    cond = next(x for x in st["conditions"] if x["type"] == "ServersSpread")
    assert (cond["status"], cond["reason"]) == ("True", "SharedNodes")
    assert cond["message"] == "2 servers on 1 node, sharing a: demo-server-0, demo-server-1; 2 not scheduled yet"
