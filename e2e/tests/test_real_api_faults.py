"""The operator through API server faults (issue 14 item 2), on real OrangeFS server pods.

* The API server and etcd restarted (`e2e/harness/cluster.sh restart`, by PID, same arguments and state) five
  times at random moments while an OrangeFSCluster is provisioned and a LayoutPolicy applied: the
  operator, which keeps running, converges to the state of a run without faults, nothing is created
  twice, and a change made right after a restart is acted on within the watch timeout.
* A silent watch: every connection between the operator and the API server goes quiet (a relay that
  stops passing bytes without closing anything, `silent_proxy.py`). A change made then reaches the operator
  once its watch gives up on the quiet connection — `settings.watching.client_timeout` — and reconnects.

Admission during an outage is `test_real_webhook.py`'s concern (the chart's `failurePolicy`)."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from pfstestkit import CLUSTER_SH
from pfstestkit.crd_release import empty_namespace
from pfstestkit.faults import edit_narrow, lp_state, narrow_strip, ofs, ofs_state, policy
from pfstestkit.local_operator import environment, local_operator
from pfstestkit.real import place
from pfstestkit.silent_proxy import silent_proxy
from pfstestkit.watches import Watches

# Only the restart test restarts what every lane shares (the serial lane); the silent watch is a relay of
# the test's own operator, so it runs in its module's lane beside the others.
pytestmark = pytest.mark.timeout(1800)

RESTARTS = ("kube-apiserver", "etcd", "kube-apiserver", "etcd", "kube-apiserver")
# The silent-watch test's operator: short watch timeouts so the test takes a minute, not the defaults'
# three (settings.py: server 120 s, client server + 30 s, requests 60 s).
SERVER_TIMEOUT_S, CLIENT_TIMEOUT_S, REQUEST_TIMEOUT_S = 20, 30, 15
DEFAULT_CLIENT_TIMEOUT_S = 150


def tolerant(probe: Callable[[], Any]) -> Callable[[], Any]:
    """A probe that answers None while the API server is away instead of failing the wait."""
    def run() -> Any:
        try:
            return probe()
        except (AssertionError, json.JSONDecodeError):
            return None
    return run


def restart(cluster: Any, component: str) -> float:
    start = time.monotonic()
    cluster.run(str(CLUSTER_SH), "restart", component, timeout=240)
    return time.monotonic() - start






@pytest.mark.restarts_control_plane
@pytest.mark.local_cluster
def test_api_server_and_etcd_restarts_mid_reconcile_converge(cluster, identity: Path, namespace: str,  # noqa: ANN001
                                                             tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("PFSLAYOUT_E2E_SEED", "14")))
    watches = Watches(cluster, namespace, outages=True)
    took: list[tuple[str, float]] = []
    try:
        with local_operator(cluster, identity, tmp_path) as op:
            cluster.apply(place(ofs(4), cluster.mode), namespace=namespace)
            cluster.apply(policy(), namespace=namespace)
            for component in RESTARTS:
                time.sleep(rng.uniform(2.0, 8.0))
                took.append((component, round(restart(cluster, component), 1)))
            back = time.monotonic()

            def converged() -> Any:
                o, p = ofs_state(cluster, namespace, 4), lp_state(cluster, namespace)
                return (o, p) if o and p else None
            try:
                state = cluster.wait_until(tolerant(converged), "converged after the restarts", timeout=600,
                                           interval=2)
            except AssertionError as err:
                raise AssertionError(f"{err}\n{op.log_tail()}") from None
            converge_s = time.monotonic() - back
            assert op.alive(), op.log_tail()

            # A change made the moment the API server is back is acted on within the watch timeout.
            restart(cluster, "kube-apiserver")
            changed = time.monotonic()
            edit_narrow(cluster, namespace, 131072)
            cluster.wait_until(tolerant(lambda: narrow_strip(cluster, namespace) == 131072 or None),
                               "the edit after a restart applied", timeout=DEFAULT_CLIENT_TIMEOUT_S, interval=1)
            react_s = time.monotonic() - changed
            assert op.alive(), op.log_tail()
            empty_namespace(cluster, namespace)  # while an operator runs: the finalizers need it
    finally:
        watches.stop()
    print(f"restarts (component, seconds until /readyz): {took}; converged {converge_s:.0f} s after the last; "
          f"an edit made after a restart applied in {react_s:.0f} s; kubectl watches restarted {watches.restarts}x")
    _, lp_st = state  # converged() required the cluster Ready with 4 servers and the policy 2/2
    assert [r["applied"] for r in lp_st["rules"]] == [True, True], lp_st
    assert not watches.created_twice(), f"created more than once: {watches.created_twice()}"


def test_a_silent_watch_is_abandoned_and_the_change_is_seen(cluster, identity: Path, namespace: str,  # noqa: ANN001
                                                            tmp_path: Path) -> None:
    config = yaml.safe_load(identity.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    assert server.hostname and server.port, server
    with silent_proxy((server.hostname, server.port)) as proxy:
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
        relayed = tmp_path / "relayed.kubeconfig"
        relayed.write_text(yaml.safe_dump(config))
        with environment(PFSLAYOUT_WATCH_SERVER_TIMEOUT=str(SERVER_TIMEOUT_S),
                         PFSLAYOUT_WATCH_CLIENT_TIMEOUT=str(CLIENT_TIMEOUT_S),
                         PFSLAYOUT_REQUEST_TIMEOUT=str(REQUEST_TIMEOUT_S)), \
                local_operator(cluster, relayed, tmp_path) as op:
            cluster.apply(place(ofs(4), cluster.mode), namespace=namespace)
            cluster.apply(policy(), namespace=namespace)
            cluster.wait_until(lambda: ofs_state(cluster, namespace, 4) and lp_state(cluster, namespace),
                               "Ready through the relay", timeout=420, interval=2)
            time.sleep(3)  # the status writes of the last reconcile are done: what goes silent is the watches
            silenced = proxy.silence()
            before = proxy.connections
            went_quiet = time.monotonic()
            edit_narrow(cluster, namespace, 262144)
            try:
                cluster.wait_until(lambda: narrow_strip(cluster, namespace) == 262144 or None,
                                   "the edit made while the watch was silent applied",
                                   timeout=CLIENT_TIMEOUT_S + REQUEST_TIMEOUT_S + 90, interval=1)
            except AssertionError as err:
                raise AssertionError(f"{err}\n{op.log_tail()}") from None
            seen_s = time.monotonic() - went_quiet
            assert op.alive(), op.log_tail()
            empty_namespace(cluster, namespace)
    print(f"{silenced} connections went silent; the edit was applied {seen_s:.0f} s later over "
          f"{proxy.connections - before} new connections (watch client timeout {CLIENT_TIMEOUT_S} s)")
    # Not before the watch could have given up: the change travelled over a new connection, not the quiet one.
    assert proxy.connections > before
