"""Fixtures of the end-to-end tier: the test cluster (one per session), a fresh namespace per test,
RBAC-limited kubeconfigs for ServiceAccounts, and the operator (one per module that asks for it: a local
process with the chart's identity on the local control plane, the chart's Deployment on kind)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfstestkit import CLUSTER_SH, node_audit
from pfstestkit.cluster import (
    UP_TIMEOUT_S,
    Cluster,
    cluster_env,
    cluster_mode,
    cluster_running,
    cluster_state_dir,
    live_users,
    pod_labels,
    proc_start,
    unavailable_reason,
    users_lock,
)
from pfstestkit.crd_release import ensure_crds, install_release, served_namespace
from pfstestkit.data_faults import host_root, served  # noqa: F401  (fixtures of the data-fault modules)
from pfstestkit.faults import identity  # noqa: F401  (a fixture of the fault modules)
from pfstestkit.lanes import SERIAL, Lane, current, enter, lane_of
from pfstestkit.local_operator import Operator, in_cluster_operator, local_operator
from pfstestkit.node_audit import task_dir
from pfstestkit.ofs_pods import incluster_operator  # noqa: F401  (a fixture: the chart's operator on the real node)
from pfstestkit.policies import lp_operator  # noqa: F401  (a fixture: the operator serving LayoutPolicies)
from pfstestkit.scheduling import join_group


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselection: build only when e2e tests will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every e2e test joins its module's lane (pfstestkit.lanes): an xdist group, so a lane's modules run
    one after another on one worker while other lanes run beside it; the serial lane runs alone after
    all of them (the root conftest's scheduler). Inside a run of one process the same order holds: the
    serial lane last, and in it the tests that restart the API server or etcd
    (`restarts_control_plane`), then the audit of what ran on the real node (`node_audit`), then the
    test that stops the cluster (`stops_cluster`).

    Builds the cluster binaries before any test starts: a cold build (~14 min on 2 cores) inside the
    session fixture would count against the first test's timeout. A no-op when they are cached (the
    test command has already built them); a failed build surfaces in the fixture."""
    items.sort(key=lambda item: (item.get_closest_marker("serial") is not None,
                                 item.get_closest_marker("stops_cluster") is not None,
                                 item.get_closest_marker("node_audit") is not None,
                                 item.get_closest_marker("restarts_control_plane") is not None))
    if config.option.collectonly or not shutil.which("go"):
        return
    if not any("cluster" in getattr(item, "fixturenames", ()) for item in items):
        return
    # Quiet: a failed build fails again, with its output, in the cluster fixture's `up`.
    subprocess.run([str(CLUSTER_SH), "build"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=UP_TIMEOUT_S, check=False)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `local_cluster` test on another cluster skips before any of its fixtures runs (the test command
    runs those tests on the local cluster and the others on kind: pfstestkit.tiers)."""
    if item.get_closest_marker("local_cluster") is None:
        return
    mode = cluster_mode()
    if mode and mode != "local":
        pytest.skip(f"needs the local control plane (marked local_cluster), not this {mode} cluster: "
                    "PFSLAYOUT_E2E_MODE=local e2e/test-all.sh runs it")


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each e2e test joins its lane's xdist group as it is collected — before pytest-xdist turns groups into
    work units in its own collection hook. A test that restarts, stops or audits what everything shares is
    in the serial lane whatever its module. The multinode tier's tests join lanes the same way: on kind
    they share a session with the e2e tier's (their node-lost and `down` tests in the serial lane)."""
    here = Path(__file__).parent
    if item.path.parent not in (here, here / "multinode"):
        return
    shared_part = any(item.get_closest_marker(m)
                      for m in ("serial", "restarts_control_plane", "stops_cluster", "node_audit"))
    lane = SERIAL if shared_part else lane_of(item.path)
    join_group(item, lane)
    if lane == SERIAL:
        item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="module", autouse=True)
def lane(request: pytest.FixtureRequest) -> Lane:
    """The module's lane: the namespaces it creates, the release and operators it runs (pfstestkit.lanes)."""
    return enter(lane_of(request.path))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The session's test cluster. Sessions share one cluster per state directory: each registers
    itself under <state>/users/; the last one to leave stops the cluster, but only if a test session
    started it (a cluster started by hand or by e2e/demo.sh is left running). PFSLAYOUT_E2E_KEEP=1
    keeps it."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    state = cluster_state_dir()
    me = f"{os.getpid()}-{proc_start(os.getpid())}"
    started_here = False
    with users_lock(state):
        if not cluster_running():
            proc = subprocess.run([str(CLUSTER_SH), "up"], capture_output=True, text=True, timeout=UP_TIMEOUT_S)
            if proc.returncode != 0:
                pytest.fail(f"e2e/harness/cluster.sh up failed ({proc.returncode}):\n{proc.stderr[-4000:]}",
                            pytrace=False)
            lines = proc.stdout.split()
            if lines and lines[-1] == "started":
                started_here = True
                (state / "fixture-started").touch()
        (state / "users").mkdir(exist_ok=True)
        (state / "users" / me).touch()
    env = cluster_env()
    state_dir = Path(env["KUBECONFIG"]).parent
    c = Cluster(kubeconfig=Path(env["KUBECONFIG"]), kubectl_path=env["KUBECTL"], helm_path=env["HELM"],
                env=env, state_dir=state_dir, started_here=started_here, mode=cluster_mode(state_dir) or "local",
                _tmp=tmp_path_factory.mktemp("cluster"))
    if c.mode == "local" and (state_dir / "node").is_dir():
        c.audit = node_audit.start(task_dir(state_dir), functools.partial(pod_labels, c))
    ensure_crds(c, state)
    try:
        yield c
    finally:
        if c.audit is not None:
            c.audit.stop()
        with users_lock(state):
            (state / "users" / me).unlink(missing_ok=True)
            if (not live_users(state / "users") and (state / "fixture-started").exists()
                    and os.environ.get("PFSLAYOUT_E2E_KEEP") != "1"):
                subprocess.run([str(CLUSTER_SH), "down"], capture_output=True, timeout=180)


def _namespace_name(nodeid: str) -> str:
    test = re.sub(r"[^a-z0-9]+", "-", nodeid.split("::")[-1].lower()).strip("-")
    return f"{current().prefix}{test[:42].strip('-')}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting for its finalisation)."""
    with served_namespace(cluster, _namespace_name(request.node.nodeid)) as name:
        yield name


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    """The lane's chart release installed and the operator running with its ServiceAccount's identity,
    serving the lane's namespaces, for one test module. Modules that run the operator in-cluster
    themselves must not use it alongside."""
    if cluster.mode == "kind":
        # kind: the chart's Deployment runs the operator image built from images/ (e2e/harness/cluster.sh).
        kubeconfig = install_release(cluster, "--set", "image.repository=pfslayout/operator", "--set",
                                     "image.tag=dev", "--timeout", "300s")
        yield in_cluster_operator(cluster, kubeconfig)
        return
    kubeconfig = install_release(cluster, host_operator=True)
    with local_operator(cluster, kubeconfig, tmp_path_factory.mktemp("operator")) as op:
        yield op
