"""The test cluster's image registry (e2e/harness/cluster/registry.sh): `up` pushes the operator, OrangeFS
and MPI images there (`images/build.sh --push`) and the real node's containerd pulls them; only the
sandbox image is imported. Real execution: the registry's own API, the kubelet pulling a tag only the
registry holds and the pod running it, with the digest its container reports (a running OrangeFS server's
digest: test_real_orangefs.py); and a server image that cannot be pulled, reported by the operator in the
OrangeFSCluster's status and Events."""

from __future__ import annotations

import json
import subprocess
import urllib.request
import uuid
from typing import Any

import pytest
import yaml

from pfstestkit.crd_release import PUSH_CHART
from pfstestkit.faults import ofs
from pfstestkit.kinds import OFS
from pfstestkit.real import assert_real_pods, place, placement, pushed_images

MANIFEST_TYPES = ", ".join(["application/vnd.oci.image.manifest.v1+json",
                            "application/vnd.docker.distribution.manifest.v2+json"])
PUSHED = {"docker.io/pfslayout/operator:dev", "docker.io/pfslayout/orangefs:dev", "docker.io/pfslayout/mpi:dev"}


def registry(cluster: Any) -> str:
    reg = cluster.env.get("PFSLAYOUT_REGISTRY", "")
    if not reg:
        pytest.skip("no image registry: the cluster has no real node (PFSLAYOUT_E2E_REAL_NODE=0) or is kind")
    return str(reg)


def manifest(reg: str, repository: str, reference: str) -> tuple[bytes, str, str]:
    """(body, media type, digest) of a manifest, from the registry's API."""
    req = urllib.request.Request(f"http://{reg}/v2/{repository}/manifests/{reference}",
                                 headers={"Accept": MANIFEST_TYPES})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read(), resp.headers["Content-Type"], resp.headers["Docker-Content-Digest"]


def split(ref: str) -> tuple[str, str, str]:
    """`<registry>/<repository>:<tag>@<digest>` -> (repository, tag, digest)."""
    name, digest = ref.split("@")
    repository, tag = name.split("/", 1)[1].rsplit(":", 1)
    return repository, tag, digest


def test_up_pushed_the_images_and_the_registry_serves_them(cluster) -> None:  # noqa: ANN001
    reg = registry(cluster)
    pushed = pushed_images(cluster.state_dir)
    assert set(pushed) == PUSHED, pushed
    with urllib.request.urlopen(f"http://{reg}/v2/_catalog", timeout=30) as resp:
        catalog = json.load(resp)["repositories"]
    for name, ref in pushed.items():
        assert ref.startswith(f"{reg}/pfslayout/"), (name, ref)
        repository, tag, digest = split(ref)
        assert repository in catalog, (repository, catalog)
        _, media_type, served = manifest(reg, repository, tag)
        assert served == digest, (ref, served)
        assert "manifest" in media_type, media_type


def test_a_pod_pulls_a_tag_only_the_registry_holds(cluster, namespace: str) -> None:  # noqa: ANN001
    """A new tag of the MPI image, made in the registry alone (its manifest put under another tag: no
    blob moves), so containerd cannot hold it: the kubelet must pull it from the registry to run the pod."""
    reg = registry(cluster)
    repository, _, digest = split(pushed_images(cluster.state_dir)["docker.io/pfslayout/mpi:dev"])
    body, media_type, _ = manifest(reg, repository, digest)
    tag = f"e2e-{uuid.uuid4().hex[:10]}"
    put = urllib.request.Request(f"http://{reg}/v2/{repository}/manifests/{tag}", data=body, method="PUT",
                                 headers={"Content-Type": media_type})
    with urllib.request.urlopen(put, timeout=30) as resp:
        assert resp.status == 201 and resp.headers["Docker-Content-Digest"] == digest
    image = f"pfslayout/mpi:{tag}"
    token = uuid.uuid4().hex
    try:
        cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pulled"},
                       "spec": {**placement(cluster.mode), "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": image, "imagePullPolicy": "IfNotPresent",
                                                "command": ["sh", "-c", 'echo "$0"; . /etc/os-release; echo "$ID"',
                                                            token]}]}},
                      namespace=namespace)

        def done() -> dict[str, Any] | None:
            pod: dict[str, Any] = cluster.kubectl_json("get", "pod", "pulled", "-n", namespace)
            phase = pod["status"].get("phase")
            assert phase != "Failed", json.dumps(pod["status"])
            return pod if phase == "Succeeded" else None
        pod = cluster.wait_until(done, f"the pod running {image}", timeout=240, interval=1)
        assert_real_pods(cluster, [pod])
        assert cluster.kubectl("logs", "pulled", "-n", namespace).stdout.split() == [token, "debian"]
        status = pod["status"]["containerStatuses"][0]
        assert status["imageID"] == f"docker.io/{repository}@{digest}", status
        events = cluster.kubectl_json("get", "events", "-n", namespace,
                                      "--field-selector", "involvedObject.name=pulled")["items"]
        pulled = [e["message"] for e in events if e["reason"] == "Pulled"]
        assert any(f'Successfully pulled image "{image}"' in m for m in pulled), pulled
    finally:
        # containerd keeps the pulled tag (its garbage collection is off on this node): drop it.
        sock = cluster.state_dir / "node" / "containerd" / "containerd.sock"
        subprocess.run(["ctr", "--address", str(sock), "-n", "k8s.io", "images", "rm", f"docker.io/{image}"],
                       capture_output=True, timeout=60, check=False)



def test_an_image_that_cannot_be_pulled_shows_in_the_clusters_status_and_events(
        cluster: Any, operator: Any, namespace: str) -> None:
    """A server image the registry does not have: the kubelet's ErrImagePull / ImagePullBackOff is the
    OrangeFSCluster's Ready reason, its message naming the image and the field to fix, and a Warning Event
    — not only in the pod."""
    registry(cluster)
    image = f"pfslayout/orangefs:missing-{uuid.uuid4().hex[:8]}"
    doc = ofs(1)
    doc["spec"]["image"] = image
    cluster.apply(place(doc, cluster.mode), namespace=namespace)

    def stuck() -> dict[str, Any] | None:
        status = cluster.kubectl_json("get", OFS, "kills", "-n", namespace).get("status") or {}
        ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})
        return ready if ready.get("reason") in ("ErrImagePull", "ImagePullBackOff") else None
    try:
        ready = cluster.wait_until(stuck, "the pull failure in the OrangeFSCluster's Ready condition", timeout=180,
                                   interval=1)
    except AssertionError as err:
        status = cluster.kubectl_json("get", OFS, "kills", "-n", namespace).get("status")
        pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
        raise AssertionError(f"{err}\nstatus: {status}\npods:\n{pods}\n{operator.log_tail()}") from None
    assert ready["status"] == "False" and image in ready["message"] and "spec.image" in ready["message"], ready
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=server")["items"]
    assert_real_pods(cluster, pods)  # the kubelet of the real node tried and failed to pull it

    def warned() -> list[str] | None:
        events = cluster.kubectl_json("get", "events", "-n", namespace, "--field-selector",
                                      "involvedObject.kind=OrangeFSCluster,involvedObject.name=kills")["items"]
        found = [e["message"] for e in events if e["type"] == "Warning"
                 and e["reason"] in ("ErrImagePull", "ImagePullBackOff") and image in e["message"]]
        return found or None
    assert cluster.wait_until(warned, "a Warning Event on the OrangeFSCluster naming the image", timeout=60)


def test_a_release_chart_names_the_released_images(cluster) -> None:  # noqa: ANN001
    """`charts/push.sh --images REGISTRY/PREFIX` (the release workflow's call): the chart pulled back from
    the registry carries the release's appVersion and names the images pushed under PREFIX at that version,
    so `helm install oci://...` needs no image value. Rendered by helm from the pulled package."""
    reg = registry(cluster)
    version = f"0.0.1-release.{uuid.uuid4().hex[:8]}"
    prefix = f"{reg}/released"
    pushed = cluster.run(str(PUSH_CHART), "--images", prefix, f"{reg}/charts", version, timeout=180).stdout.split()
    chart = f"oci://{reg}/charts/pfs-layout-operator"
    assert pushed[:2] == [chart, version], pushed
    shown = cluster.helm("show", "chart", chart, "--version", version, "--plain-http", timeout=120).stdout
    assert f'appVersion: {version}' in shown.replace('"', ""), shown
    rendered = cluster.helm("template", "r", chart, "--version", version, "--plain-http", "-n", "x",
                            timeout=120).stdout
    deployment = next(d for d in yaml.safe_load_all(rendered) if d and d.get("kind") == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"{prefix}/operator:{version}", container["image"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PFSLAYOUT_ORANGEFS_IMAGE"] == f"{prefix}/orangefs:{version}", env
    assert env["PFSLAYOUT_MPI_IMAGE"] == f"{prefix}/mpi:{version}", env
