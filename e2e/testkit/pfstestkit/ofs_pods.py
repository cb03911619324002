"""OrangeFS on the real node: the operator installed in-cluster from the chart, OrangeFSClusters waited
for until their servers are Ready, the client toolbox and commands run in it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from pfstestkit.cluster import Cluster
from pfstestkit.crd_release import chart_source
from pfstestkit.kinds import OFS
from pfstestkit.lanes import current
from pfstestkit.real import assert_real_pods, operator_chart_values

READY_TIMEOUT = 240


def deployment_pods(cluster: Cluster, ns: str, selector: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = cluster.kubectl_json("get", "pods", "-n", ns, "-l", selector)["items"]
    return pods


def server_selector(name: str) -> str:
    """The label selector of an OrangeFSCluster's server pods."""
    return f"app.kubernetes.io/instance={name},app.kubernetes.io/component=server"


def server_pods(cluster: Cluster, ns: str, name: str) -> list[dict[str, Any]]:
    """The OrangeFSCluster's server pods."""
    return deployment_pods(cluster, ns, server_selector(name))


def pod_ready(pod: dict[str, Any]) -> bool:
    return pod["metadata"].get("deletionTimestamp") is None and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


@pytest.fixture(scope="module")
def incluster_operator(cluster: Cluster) -> Iterator[dict[str, Any]]:
    """The lane's chart release installed with the operator image, its pod on a real node. Uninstalled
    afterwards, so the modules that run the operator as a local process never meet a second operator."""
    lane = current()
    cluster.helm("upgrade", "--install", lane.release, *chart_source(cluster), "-n", lane.release_ns,
                 "--create-namespace",
                 *operator_chart_values(cluster.mode, cluster.state_dir), *lane.chart_values,
                 "--wait", "--timeout", "300s", timeout=360)
    selector = f"app.kubernetes.io/instance={lane.release},app.kubernetes.io/component=operator"
    pods = cluster.wait_until(lambda: [p for p in deployment_pods(cluster, lane.release_ns, selector) if pod_ready(p)],
                              "the operator pod Ready", timeout=180, interval=1)
    assert_real_pods(cluster, pods)
    try:
        yield pods[0]
    finally:
        # The operator removes its finalizers from the OrangeFSClusters of the namespaces the tests are
        # deleting; uninstalled before that, those namespaces would hang in Terminating.
        def leftovers() -> list[str]:
            items = cluster.kubectl_json("get", OFS, "-A")["items"]
            return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items
                    if o["metadata"]["namespace"].startswith(lane.prefix)]
        try:
            cluster.wait_until(lambda: not leftovers(), "the tests' OrangeFSClusters to be deleted",
                               timeout=180, interval=2)
        except AssertionError as err:
            raise AssertionError(f"{err}\noperator log:\n{operator_log(cluster)}") from None
        finally:
            cluster.helm("uninstall", lane.release, "-n", lane.release_ns, "--wait", "--timeout", "120s", check=False)


def operator_log(cluster: Cluster) -> str:
    """The tail of the in-cluster operator's log (the current lane's release)."""
    lane = current()
    return str(cluster.kubectl("logs", "-n", lane.release_ns, f"deployment/{lane.release}", "--tail=200",
                               check=False).stdout)


def wait_ofs_ready(cluster: Cluster, ns: str, name: str, servers: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        obj: dict[str, Any] = cluster.kubectl_json("get", OFS, name, "-n", ns)
        st = obj.get("status") or {}
        ready: dict[str, Any] = next((c for c in st.get("conditions") or [] if c["type"] == "Ready"), {})
        return obj if ready.get("status") == "True" and st.get("readyServers") == servers else None
    try:
        ready_obj: dict[str, Any] = cluster.wait_until(probe, f"{ns}/{name} Ready with {servers} real servers",
                                                       timeout=READY_TIMEOUT, interval=1)
        return ready_obj
    except AssertionError as err:
        raise AssertionError(f"{err}\n{why_not_ready(cluster, ns, name)}\noperator log:\n{operator_log(cluster)}"
                             ) from None


def why_not_ready(cluster: Cluster, ns: str, name: str) -> str:
    """What explains servers that are not Ready: the namespace's pods and recent events (a failing readiness
    probe, a slow pull, a pending claim) and the last lines of each not-Ready server's log."""
    pods = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).stdout
    events = cluster.kubectl("get", "events", "-n", ns, "--sort-by=.lastTimestamp", check=False).stdout
    logs = []
    for pod in server_pods(cluster, ns, name):
        if not pod_ready(pod):
            pod_name = pod["metadata"]["name"]
            tail = cluster.kubectl("logs", "-n", ns, pod_name, "-c", "server", "--tail=15", check=False)
            logs.append(f"{pod_name}:\n{tail.stdout}{tail.stderr}")
    return (f"pods:\n{pods}\nevents (last 30):\n" + "\n".join(events.splitlines()[-30:]) +
            "\nnot-Ready servers' logs:\n" + "\n".join(logs))


def toolbox(cluster: Cluster, ns: str, name: str) -> str:
    pods = [p for p in deployment_pods(cluster, ns, f"app.kubernetes.io/instance={name},"
                                       "app.kubernetes.io/component=client") if pod_ready(p)]
    assert pods, f"no Ready toolbox pod for {ns}/{name}"
    return str(pods[0]["metadata"]["name"])


def sh(cluster: Cluster, ns: str, pod: str, script: str, stdin: str | None = None, timeout: float = 120) -> str:
    """Runs `script` in the pod's first container; kwok could not (exec is off for its nodes)."""
    args = ["exec", "-n", ns, pod]
    if stdin is not None:
        args.append("-i")
    return str(cluster.kubectl(*args, "--", "sh", "-c", script, input=stdin, timeout=timeout).stdout)


def datafiles(viewdist: str) -> int:
    m = re.search(r"Number of datafiles/servers = (\d+)", viewdist)
    assert m, f"pvfs2-viewdist printed no datafile count:\n{viewdist}"
    return int(m.group(1))


def datafile_servers(viewdist: str) -> list[str]:
    """The BMI addresses of a file's datafiles in order ("Datafile 0 - tcp://host:3334, handle: ...")."""
    return re.findall(r"^Datafile \d+ - (\S+?),", viewdist, flags=re.M)
