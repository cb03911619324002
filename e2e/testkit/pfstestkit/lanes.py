"""The lanes of the end-to-end tier: which test modules run one after another on one pytest-xdist worker,
and what each lane owns so that lanes running side by side never meet.

A lane owns a namespace prefix (``e2e-<lane>-``) and the operators it starts serve only that prefix.
The shared lanes — ``r`` (the release lane) and ``s`` (the serial lane) — use the chart release every
user installs (crd_release.RELEASE: it owns the CRDs and the admission webhook, runs the in-cluster
operator, is upgraded and uninstalled by its tests). Every other lane installs a release of its own,
``pfs-layout-operator-<lane>`` in ``pfs-layout-system-<lane>`` (no CRDs, no webhook: its ServiceAccount,
RBAC and per-namespace ClusterRole are what its operator needs, run locally or as the chart's Deployment),
so no lane's helm command touches another lane's objects.

The serial lane runs alone after every other test of the session (the root conftest's scheduler): its
modules restart or stop shared parts — the API server and etcd, the node — install the previous release
over the shared one, or audit what every other lane ran on the real node.

The module → lane table below is the one place a module's lane is set; a module not in it is an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The chart release a user installs (and the demo): the shared lanes use it.
RELEASE, RELEASE_NS = "pfs-layout-operator", "pfs-layout-system"
SERIAL = "s"
SHARED = frozenset({"r", SERIAL})

# e2e module -> lane. Lanes are balanced by their measured run time (docs/test-cluster.md, Timings).
MODULES: dict[str, str] = {
    # the release lane: the shared chart release (CRDs, webhook, the in-cluster operator) and its tests
    "test_chart_install.py": "r",
    "test_crds_apiserver.py": "r",
    "test_invalid_manifests.py": "r",
    "test_real_orangefs.py": "r",
    "test_real_webhook.py": "r",
    # kills the release's leader: its webhook serves only the shared lanes' namespaces (the ones holding a
    # LayoutPolicy it serves), so the lanes beside it never meet the review it drops
    "test_real_ha.py": "r",
    # the multinode tier (kind; one process, the release lane's release)
    "test_kind_nodes.py": "r",
    "test_multinode_orangefs.py": "r",
    "test_multinode_node_lost.py": "r",  # marked serial: it runs last in its session
    "test_kind_down.py": "r",  # marked stops_cluster: after that
    # lanes of their own: an operator (local, or in-cluster for calibration) with a release of its own
    "test_test_cluster.py": "a",
    "test_cluster_sh_lifecycle.py": "a",
    "test_real_node.py": "a",
    "test_operator_orangefscluster.py": "a",
    "test_real_injection.py": "a",
    "test_real_layoutpolicy.py": "f",
    "test_real_learning.py": "f",
    "test_real_data_faults.py": "b",
    "test_real_uninstall.py": "b",  # its own in-cluster release, uninstalled with objects present
    "test_real_server_outages.py": "g",
    "test_real_calibration_restarts.py": "e",
    "test_real_registry.py": "e",
    "test_real_operator_kills.py": "c",
    "test_real_api_faults.py": "c",  # its restart test is marked restarts_control_plane: the serial lane
    "test_real_calibration.py": "d",
    "test_generated_specs.py": "e",
    # the serial lane: after everything else, alone
    "test_real_upgrade.py": SERIAL,
    "test_real_pod_hardening.py": SERIAL,
    "test_real_node_stop.py": SERIAL,
}

# Each lane's run time in minutes on the 2-core machine, three lanes side by side: the `lane minutes` lines of
# kind's session with the multinode tier in it (2026-11-30, 4e426cf, warm, alone on the machine; docs/
# test-cluster.md Timings): d 14.2, a 10.1, f 8.9, r 8.9, c 8.8, e 4.5, b 1.0 (the serial lane s 3.2 after
# them); g, the server outages, ≈ 3 + 3 since both run there. On the local cluster (7735b3e, cold)
# r 2.2, e 2.1, b 1.5, a 0.4. Lane r's 14.3 adds test_real_ha.py's 5.4 (local cluster, alone, session 40)
# to its 8.9. One figure per lane: a lane's longest session sets
# it. The scheduler starts the longest first.
MINUTES: dict[str, float] = {"d": 14.2, "a": 10.1, "f": 8.9, "r": 14.3, "c": 8.8, "g": 6.0, "e": 4.5, "b": 1.5}


def minutes_by_lane(reports: Iterable[Any]) -> dict[str, float]:
    """Each lane's minutes in a run side by side — the setup, call and teardown of its tests, from pytest's
    reports, whose node ids end in `@<lane>` there (scheduling.join_group) — longest first: the figures
    MINUTES follows. A test's time depends on its neighbours (docs/test-cluster.md), so read several runs."""
    lanes = set(MODULES.values())
    totals: dict[str, float] = {}
    for rep in reports:
        lane = str(getattr(rep, "nodeid", "")).rpartition("@")[2]
        if lane in lanes and isinstance(getattr(rep, "duration", None), float):
            totals[lane] = totals.get(lane, 0.0) + rep.duration / 60
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


@dataclass(frozen=True)
class Lane:
    name: str

    @property
    def shared(self) -> bool:
        return self.name in SHARED

    @property
    def prefix(self) -> str:
        """The prefix of every namespace the lane's tests create."""
        return f"e2e-{self.name}-"

    @property
    def release(self) -> str:
        return RELEASE if self.shared else f"{RELEASE}-{self.name}"

    @property
    def release_ns(self) -> str:
        return RELEASE_NS if self.shared else f"{RELEASE_NS}-{self.name}"

    @property
    def namespace_role(self) -> str:
        """The chart's ClusterRole of the operator's rights inside a namespace it serves."""
        return f"{self.release}-namespace"

    @property
    def service_account(self) -> str:
        return f"{self.release_ns}:{self.release}"

    @property
    def watch(self) -> tuple[str, ...]:
        """The namespaces the lane's operators serve (operator.watchNamespaces). The shared release also
        serves the benchmarks' `pfsbench-*`, as the benches install it."""
        return (f"{self.prefix}*", "pfsbench-*") if self.shared else (f"{self.prefix}*",)

    @property
    def watch_values(self) -> list[str]:
        """`helm --set-json` of the watched namespaces."""
        return ["--set-json", "operator.watchNamespaces=[" + ",".join(f'"{w}"' for w in self.watch) + "]"]

    @property
    def chart_values(self) -> list[str]:
        """Helm values of the lane's release beyond the watched namespaces: one operator replica (the chart's
        two, leader and standby, are test_real_ha.py's: a standby per lane would cost the 2-core machine a
        process each for nothing the lane tests); a lane's own release leaves the CRDs and the admission
        webhook to the shared one."""
        extra = [] if self.shared else ["--set", "crds.install=false", "--set", "webhook.enabled=false"]
        return [*self.watch_values, "--set", "replicas=1", *extra]


_current = Lane("r")


def lane_of(path: str | Path) -> str:
    """The lane of an e2e test module; fails naming the table when it has none."""
    name = Path(path).name
    if name not in MODULES:
        raise KeyError(f"{name} has no lane: add it to pfstestkit.lanes.MODULES")
    return MODULES[name]


def current() -> Lane:
    """The lane of the module running now (one module at a time runs in a worker process)."""
    return _current


def enter(name: str) -> Lane:
    global _current
    _current = Lane(name)
    return _current
