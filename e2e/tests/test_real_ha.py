"""Two operator replicas, one leader (issue 34 item 1; docs/reliability.md, "Two replicas").

The chart with its two replicas on a real node, peering through `ClusterKopfPeering pfs-layout-operator`.
A LayoutPolicy on a real OrangeFS cluster is Applied. Then, twice, while a stream of MPIJob creates that the
policy selects runs (one every 100 ms, each admitted through the webhook), the leader goes and the policy is
edited at once:

1. the leader's pod is deleted — a drain, an eviction, an upgrade: it serves on for the chart's
   `shutdownDelaySeconds` while it leaves the webhook's endpoints, then hands over. No create may be
   refused (60 s of them);
2. the new leader's process is SIGKILLed — a crash: no hand-over, its peering record lapses after its
   lifetime (10 s). Reviews in flight to the dead process, or routed to it before its endpoint goes, fail:
   the API server does not retry a webhook call, so these are counted and printed, not asserted away.

Each time the standby leads and reconciles the edit (the seconds from the loss are printed; goal 15 s),
every admitted job got the shim (each replica serves the webhook from its own copy of the policies, the
paused standby too), and throughout no object was created twice (one UID per name in the namespace).
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from pfslayout.images import DEFAULT_MPI_IMAGE
from pfstestkit.cluster import Cluster
from pfstestkit.crd_release import RELEASE, RELEASE_NS, chart_source, empty_namespace, served_namespace
from pfstestkit.lanes import current
from pfstestkit.ofs_pods import deployment_pods, pod_ready, wait_ofs_ready
from pfstestkit.policies import cond, lp_status
from pfstestkit.real import assert_real_pods, operator_chart_values, place
from pfstestkit.watches import Watches

pytestmark = [pytest.mark.timeout(1200)]

OPERATOR = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=operator"
LP = "layoutpolicies.pfslayout.io"
INJECTED = "pfslayout.io/injected"
EVERY_S, LOSS_AT_S = 0.1, 10.0
GOAL_S = 15.0  # the issue's failover goal: printed against, not asserted (the machine is shared)


def operator_pods(cluster: Cluster) -> list[dict[str, Any]]:
    return [p for p in deployment_pods(cluster, RELEASE_NS, OPERATOR) if pod_ready(p)]


def leader(cluster: Cluster) -> str | None:
    """The live peer of highest priority in the release's peering object: the pod that reconciles."""
    peers = (cluster.kubectl_json("get", "clusterkopfpeerings.kopf.dev", RELEASE).get("status") or {})
    now = dt.datetime.now(dt.UTC)
    live = [(int(p["priority"]), name) for name, p in peers.items() if isinstance(p, dict)
            and dt.datetime.fromisoformat(p["lastseen"].replace("Z", "+00:00"))
            + dt.timedelta(seconds=int(p["lifetime"])) > now]
    return max(live)[1] if live else None


def crash(cluster: Cluster, pod: dict[str, Any]) -> None:
    """SIGKILL the operator process of `pod` on its node — a crash, not a stop: Kopf cannot hand over."""
    name = pod["metadata"]["name"]
    if cluster.mode == "local":  # the real node is this machine
        for proc in Path("/proc").iterdir():
            try:
                env = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"POD_ID={name}".encode() in env and b"kopf" in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
                return
        raise AssertionError(f"no operator process of pod {name} on this machine")
    engine = "podman" if cluster.env.get("KIND_EXPERIMENTAL_PROVIDER") == "podman" else "docker"
    script = ('for p in /proc/[0-9]*; do if tr "\\0" "\\n" < "$p/environ" 2>/dev/null | grep -qx "POD_ID=$1" '
              '&& grep -q kopf "$p/cmdline"; then kill -9 "${p#/proc/}"; exit 0; fi; done; exit 1')
    cluster.run(engine, "exec", pod["spec"]["nodeName"], "sh", "-c", script, "sh", name, timeout=60)


def policy(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "ha"},
            "spec": {"clusterRef": {"name": "ha"}, "selector": {"matchLabels": {"app": "ha"}}, "rules": rules}}


def job(name: str) -> dict[str, Any]:
    """A selected MPIJob the MPI Operator leaves alone (runPolicy.managedBy): admission is what is tested."""
    pod = {"spec": {"containers": [{"name": "c", "image": DEFAULT_MPI_IMAGE, "args": ["true"]}]}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name, "labels": {"app": "ha"}},
            "spec": {"mpiImplementation": "MPICH", "slotsPerWorker": 1,
                     "runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod},
                                         "Worker": {"replicas": 1, "template": pod}}}}


class Stream(threading.Thread):
    """One create every EVERY_S for STREAM_S; what each got back."""

    def __init__(self, ns: str, kubeconfig: Path, seconds: float, prefix: str) -> None:
        super().__init__(daemon=True)
        self.ns, self.seconds, self.prefix = ns, seconds, prefix
        self.created: list[str] = []
        self.refused: list[tuple[float, str, int | None, str]] = []  # (second, job, HTTP status, message)
        self.api = client.CustomObjectsApi(config.new_client_from_config(str(kubeconfig)))
        self.started = time.monotonic()

    def run(self) -> None:
        i = 0
        while (t := time.monotonic() - self.started) < self.seconds:
            name = f"{self.prefix}-{i:04d}"
            try:
                self.api.create_namespaced_custom_object("kubeflow.org", "v2beta1", self.ns, "mpijobs", job(name),
                                                         _request_timeout=30)
                self.created.append(name)
            except ApiException as err:
                self.refused.append((round(t, 1), name, err.status, (err.body or "")[:300]))
            i += 1
            time.sleep(max(0.0, self.started + i * EVERY_S - time.monotonic()))


def test_the_standby_takes_over_a_deleted_or_crashed_leader_and_admission_goes_on(cluster: Cluster) -> None:
    cluster.helm("upgrade", "--install", RELEASE, *chart_source(cluster), "-n", RELEASE_NS, "--create-namespace",
                 *operator_chart_values(cluster.mode, cluster.state_dir), *current().watch_values,
                 "--set", "replicas=2", "--wait", "--timeout", "300s", timeout=360)
    try:
        with served_namespace(cluster, f"{current().prefix}ha") as ns:
            run_scenario(cluster, ns)
            empty_namespace(cluster, ns)
    finally:
        cluster.helm("upgrade", RELEASE, *chart_source(cluster), "-n", RELEASE_NS, "--reuse-values",
                     "--set", "replicas=1", "--wait", "--timeout", "180s", check=False, timeout=240)


def pair(cluster: Cluster) -> tuple[dict[str, Any], dict[str, Any]]:
    """(leader, standby): both replicas Ready on a real node, the leader as the peering object says."""
    def ready() -> tuple[dict[str, Any], dict[str, Any]] | None:
        pods = operator_pods(cluster)
        lead = leader(cluster)
        if len(pods) != 2 or lead not in {p["metadata"]["name"] for p in pods}:
            return None
        first = next(p for p in pods if p["metadata"]["name"] == lead)
        return first, next(p for p in pods if p is not first)
    got = cluster.wait_until(ready, "two operator replicas Ready, one leading", timeout=240, interval=1)
    assert_real_pods(cluster, list(got))
    return got


def lose_leader(cluster: Cluster, ns: str, how: str, seconds: float, rules: list[dict[str, Any]]) -> Stream:
    """A stream of creates; LOSS_AT_S into it the leader goes (`how`: delete or crash) and the policy is
    edited to `rules`: the standby must lead and reconcile it. The stream, finished."""
    lead, standby = pair(cluster)
    stream = Stream(ns, cluster.kubeconfig, seconds, f"{how}")
    stream.start()
    time.sleep(LOSS_AT_S)
    if how == "delete":
        cluster.kubectl("delete", "pod", lead["metadata"]["name"], "-n", RELEASE_NS, "--wait=false")
    else:
        crash(cluster, lead)
    lost = time.monotonic()
    cluster.apply(policy(rules), namespace=ns)
    generation = cluster.kubectl_json("get", LP, "ha", "-n", ns)["metadata"]["generation"]
    name = standby["metadata"]["name"]
    cluster.wait_until(lambda: leader(cluster) == name or None, f"{name} leading", timeout=120, interval=0.5)
    took = time.monotonic() - lost
    cluster.wait_until(lambda: lp_status(cluster, ns, "ha").get("observedGeneration") == generation or None,
                       "the edit reconciled by the new leader", timeout=180, interval=0.5)
    edited = time.monotonic() - lost

    def applied() -> dict[str, Any] | None:
        st = lp_status(cluster, ns, "ha")
        ok = st.get("observedGeneration") == generation and cond(st, "Ready").get("reason") == "Applied" \
            and [r.get("applied") for r in st.get("rules") or []] == [True] * len(rules)
        return st if ok else None
    status = cluster.wait_until(applied, "the edit applied (its hint Job run)", timeout=180, interval=0.5)
    done = time.monotonic() - lost
    stream.join(seconds + 60)
    print(f"failover ({how} of the leader): the standby led {took:.1f} s after and reconciled the edit made "
          f"then {edited:.1f} s after (goal {GOAL_S:g} s: ratio {edited / GOAL_S:.2f}; its hint Job done at "
          f"{done:.1f} s); {len(stream.created)} creates in {seconds:g} s, {len(stream.refused)} refused "
          f"{[r[:3] for r in stream.refused]}")
    assert [r["path"] for r in status["rules"]] == [r["path"] for r in rules]
    assert len(stream.created) >= seconds / EVERY_S * 0.5, len(stream.created)
    return stream


def run_scenario(cluster: Cluster, ns: str) -> None:
    cluster.apply(place({"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "ha"},
                         "spec": {"servers": {"count": 2, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                                  "storage": {"type": "emptyDir", "size": "512Mi"}, "client": {"replicas": 1},
                                  "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}, cluster.mode),
                  namespace=ns)
    wait_ofs_ready(cluster, ns, "ha", 2)
    rules = [{"path": "/ha-a", "mode": "explicit", "explicit": {"layout": "1-DH"}}]
    cluster.apply(policy(rules), namespace=ns)
    cluster.wait_until(lambda: cond(lp_status(cluster, ns, "ha"), "Ready").get("reason") == "Applied" or None,
                       "LayoutPolicy ha Applied", timeout=180, interval=1)
    watches = Watches(cluster, ns)
    rules = [*rules, {"path": "/ha-b", "mode": "explicit", "explicit": {"layout": "1-DV"}}]
    deleted = lose_leader(cluster, ns, "delete", 60.0, rules)
    # the goal: a pod that goes the way pods go (drain, eviction, upgrade) costs no admission
    assert not deleted.refused, deleted.refused[:5]
    rules = [*rules, {"path": "/ha-c", "mode": "explicit", "explicit": {"layout": "1-DH"}}]
    lose_leader(cluster, ns, "crash", 30.0, rules)
    watches.stop()
    jobs = cluster.kubectl_json("get", "mpijobs.kubeflow.org", "-n", ns, "-l", "app=ha")["items"]
    missed = [j["metadata"]["name"] for j in jobs if (j["metadata"].get("annotations") or {}).get(INJECTED) != "ha"]
    assert jobs and not missed, f"admitted without the shim: {missed[:10]}"
    assert not watches.created_twice(), watches.created_twice()
    # the crashed replica came back (its container restarted) and stands by under the new leader
    pair(cluster)
