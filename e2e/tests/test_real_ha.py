"""Two operator replicas, one leader (issue 34 item 1; docs/reliability.md, "Two replicas").

The chart with its two replicas on a real node, peering through `ClusterKopfPeering pfs-layout-operator`.
A LayoutPolicy on a real OrangeFS cluster is Applied. Then, while a stream of MPIJob creates that the policy
selects runs (one every 100 ms for 60 s, each admitted through the webhook), the leader's operator process
is SIGKILLed — a crash: no hand-over, its peering record lapses — and the policy is edited at once. What
must hold:

* the standby takes the lead and the edit is reconciled: the seconds from the kill are printed (goal 15 s);
* no create was refused and every job got the shim (each replica serves the webhook from its own copy of
  the policies, the paused standby too);
* no object was created twice (one UID per name in the namespace throughout), and the policy ends Applied
  with the edit's rule, as without the kill.
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
STREAM_S, EVERY_S, KILL_AT_S = 60.0, 0.1, 10.0
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

    def __init__(self, ns: str, kubeconfig: Path) -> None:
        super().__init__(daemon=True)
        self.ns = ns
        self.created: list[str] = []
        self.refused: list[tuple[float, str, int | None, str]] = []  # (second, job, HTTP status, message)
        self.api = client.CustomObjectsApi(config.new_client_from_config(str(kubeconfig)))
        self.started = time.monotonic()

    def run(self) -> None:
        i = 0
        while (t := time.monotonic() - self.started) < STREAM_S:
            name = f"ha-{i:04d}"
            try:
                self.api.create_namespaced_custom_object("kubeflow.org", "v2beta1", self.ns, "mpijobs", job(name),
                                                         _request_timeout=30)
                self.created.append(name)
            except ApiException as err:
                self.refused.append((round(t, 1), name, err.status, (err.body or "")[:300]))
            i += 1
            time.sleep(max(0.0, self.started + i * EVERY_S - time.monotonic()))


def test_a_crashed_leader_hands_over_and_no_admission_fails(cluster: Cluster) -> None:
    cluster.helm("upgrade", "--install", RELEASE, *chart_source(cluster), "-n", RELEASE_NS, "--create-namespace",
                 *operator_chart_values(cluster.mode, cluster.state_dir), *current().watch_values,
                 "--set", "replicas=2", "--wait", "--timeout", "300s", timeout=360)
    try:
        pods = cluster.wait_until(lambda: (p if len(p := operator_pods(cluster)) == 2 else None),
                                  "two operator replicas Ready", timeout=240, interval=1)
        assert_real_pods(cluster, pods)
        first = cluster.wait_until(lambda: leader(cluster), "a leader in the peering object", timeout=60, interval=1)
        assert first in {p["metadata"]["name"] for p in pods}
        with served_namespace(cluster, f"{current().prefix}ha") as ns:
            run_scenario(cluster, ns, pods, first)
            empty_namespace(cluster, ns)
    finally:
        cluster.helm("upgrade", RELEASE, *chart_source(cluster), "-n", RELEASE_NS, "--reuse-values",
                     "--set", "replicas=1", "--wait", "--timeout", "180s", check=False, timeout=240)


def run_scenario(cluster: Cluster, ns: str, pods: list[dict[str, Any]], first: str) -> None:
    cluster.apply(place({"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "ha"},
                         "spec": {"servers": {"count": 2, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                                  "storage": {"type": "emptyDir", "size": "512Mi"}, "client": {"replicas": 1},
                                  "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}, cluster.mode),
                  namespace=ns)
    wait_ofs_ready(cluster, ns, "ha", 2)
    one = [{"path": "/ha-a", "mode": "explicit", "explicit": {"layout": "1-DH"}}]
    cluster.apply(policy(one), namespace=ns)
    cluster.wait_until(lambda: cond(lp_status(cluster, ns, "ha"), "Ready").get("reason") == "Applied" or None,
                       "LayoutPolicy ha Applied", timeout=180, interval=1)
    watches = Watches(cluster, ns)
    stream = Stream(ns, cluster.kubeconfig)
    stream.start()
    time.sleep(KILL_AT_S)
    victim = next(p for p in pods if p["metadata"]["name"] == first)
    crash(cluster, victim)
    killed = time.monotonic()
    two = [*one, {"path": "/ha-b", "mode": "explicit", "explicit": {"layout": "1-DV"}}]
    cluster.apply(policy(two), namespace=ns)
    generation = cluster.kubectl_json("get", LP, "ha", "-n", ns)["metadata"]["generation"]
    standby = next(p["metadata"]["name"] for p in pods if p["metadata"]["name"] != first)
    cluster.wait_until(lambda: leader(cluster) == standby or None, "the standby leading", timeout=120, interval=0.5)
    took = time.monotonic() - killed

    def reconciled() -> dict[str, Any] | None:
        st = lp_status(cluster, ns, "ha")
        ok = st.get("observedGeneration") == generation and cond(st, "Ready").get("reason") == "Applied" \
            and [r.get("applied") for r in st.get("rules") or []] == [True, True]
        return st if ok else None
    status = cluster.wait_until(reconciled, "the edit reconciled by the new leader", timeout=180, interval=0.5)
    edited = time.monotonic() - killed
    stream.join(STREAM_S + 60)
    watches.stop()
    print(f"failover: the standby led {took:.1f} s after the leader's crash, the edit was reconciled "
          f"{edited:.1f} s after it (goal {GOAL_S:g} s: ratio {edited / GOAL_S:.2f}); "
          f"{len(stream.created)} creates, {len(stream.refused)} refused")
    assert not stream.refused, stream.refused[:5]
    assert len(stream.created) >= STREAM_S / EVERY_S * 0.5, len(stream.created)
    jobs = cluster.kubectl_json("get", "mpijobs.kubeflow.org", "-n", ns, "-l", "app=ha")["items"]
    missed = [j["metadata"]["name"] for j in jobs if (j["metadata"].get("annotations") or {}).get(INJECTED) != "ha"]
    assert not missed, f"admitted without the shim: {missed[:10]}"
    assert not watches.created_twice(), watches.created_twice()
    assert [r["path"] for r in status["rules"]] == ["/ha-a", "/ha-b"]
    # the killed replica came back (its container restarted) and stands by under the new leader
    back = cluster.wait_until(lambda: (p if len(p := operator_pods(cluster)) == 2 else None),
                              "the crashed replica back", timeout=180, interval=1)
    assert {p["metadata"]["name"] for p in back} == {first, standby} and leader(cluster) == standby
