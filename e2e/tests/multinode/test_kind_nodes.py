"""The kind cluster as users meet it (issue 32, item 1): several real nodes, each with its own kubelet and
containerd; the project's images pulled by every node from the test cluster's registry; kwok's fake
nodes beside them tainted, so a pod that does not ask for one never lands where nothing runs."""

from __future__ import annotations

from typing import Any

from pfslayout.images import DEFAULT_ORANGEFS_IMAGE
from pfstestkit.real import KWOK_ANNOTATION, KWOK_TAINT, assert_real_pods, pushed_images


def _nodes(cluster: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    items = cluster.kubectl_json("get", "nodes")["items"]
    fake = [n for n in items if KWOK_ANNOTATION in (n["metadata"].get("annotations") or {})]
    real = [n for n in items if n not in fake]
    return real, fake


def test_real_nodes_and_tainted_fake_nodes(cluster) -> None:  # noqa: ANN001
    assert cluster.mode == "kind", "the multinode tier runs on the kind cluster (PFSLAYOUT_E2E_MODE=kind)"
    real, fake = _nodes(cluster)
    workers = [n for n in real if (n["metadata"].get("labels") or {}).get("pfslayout.io/hpc-node") == "true"]
    assert len(workers) >= 3, [n["metadata"]["name"] for n in real]
    for node in real:
        info = node["status"]["nodeInfo"]
        # each node runs a kubelet and a containerd of its own, at its own address
        assert info["containerRuntimeVersion"].startswith("containerd://"), info
        assert not info["kubeletVersion"].startswith("kwok"), info
    addresses = {a["address"] for n in real for a in n["status"]["addresses"] if a["type"] == "InternalIP"}
    assert len(addresses) == len(real), addresses
    assert fake, "kwok's fake nodes are missing (the tests that need many nodes use them)"
    for node in fake:
        taints = [{k: t[k] for k in ("key", "value", "effect")} for t in node["spec"].get("taints") or []]
        assert KWOK_TAINT in taints, node["metadata"]["name"]


def test_pods_without_tolerations_run_only_on_real_nodes_from_the_registry(cluster, namespace: str) -> None:  # noqa: ANN001
    """Six pods of a Deployment that asks for nothing: all really run (each prints its own kernel's
    hostname — the pod's name — which only a started container can), spread over the workers, on the
    OrangeFS image the nodes pulled from the test cluster's registry."""
    replicas = 6
    cluster.apply({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "where"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "where"}},
                 "template": {"metadata": {"labels": {"app": "where"}}, "spec": {
                     "containers": [{"name": "where", "image": DEFAULT_ORANGEFS_IMAGE,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sh", "-c", "cat /proc/sys/kernel/hostname; exec sleep 3600"]}]}}},
    }, namespace=namespace)

    def running() -> list[dict[str, Any]] | None:
        pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "app=where")["items"]
        ok = [p for p in pods if p["status"].get("phase") == "Running"]
        return ok if len(ok) == replicas else None
    pods = cluster.wait_until(running, f"{replicas} Running pods", timeout=240, interval=1)
    assert_real_pods(cluster, pods)
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(nodes) >= 2, f"the scheduler put all {replicas} pods on {nodes}"
    for pod in pods:
        name = pod["metadata"]["name"]
        out = cluster.wait_until(
            lambda n=name: cluster.kubectl("logs", "-n", namespace, n, check=False).stdout.strip(),
            f"{name}'s output", timeout=60)
        assert out == name, f"{name} printed {out!r}"
    pushed = pushed_images(cluster.state_dir).get(f"docker.io/{DEFAULT_ORANGEFS_IMAGE}")
    assert pushed, f"`up` pushed no {DEFAULT_ORANGEFS_IMAGE} (state: {cluster.state_dir}/node/images.pushed)"
    digest = pushed.split("@")[1]
    for pod in pods:
        image_id = pod["status"]["containerStatuses"][0]["imageID"]
        assert image_id.endswith(f"@{digest}"), (pod["spec"]["nodeName"], image_id, pushed)
