"""The kind harness's static facts, checked without a container engine (docs/kind.md): the cluster's shape,
node labels the kubelet accepts, and the flannel manifest agreeing with what node-image.sh and
net-images.sh assume of it. Each is a way `e2e/harness/cluster.sh up` in kind mode broke or would break
only minutes into a run (a worker's kubelet refusing its labels left `kind create` waiting 5 minutes)."""

from __future__ import annotations

import json
import re

import yaml

from pfstestkit import REPO

KIND = REPO / "e2e" / "harness" / "kind"
# kubelet --node-labels in kubernetes.io / k8s.io must use one of these prefixes (kubelet's own check)
KUBELET_LABEL_PREFIXES = ("kubelet.kubernetes.io/", "node.kubernetes.io/")


def versions() -> dict[str, str]:
    text = (REPO / "e2e" / "harness" / "cluster" / "versions.env").read_text()
    return dict(re.findall(r"^([A-Z0-9_]+)=(\S+)", text, re.M))


def test_the_cluster_is_one_control_plane_and_three_workers_with_labels_the_kubelet_accepts() -> None:
    config = yaml.safe_load((KIND / "config.yaml").read_text())
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker", "worker", "worker"]
    assert config["networking"]["apiServerAddress"] == "127.0.0.1"
    for node in config["nodes"]:
        for label in node.get("labels", {}):
            domain = label.split("/")[0] if "/" in label else ""
            if domain.endswith(("kubernetes.io", "k8s.io")):
                assert label.startswith(KUBELET_LABEL_PREFIXES), f"the kubelet refuses --node-labels {label}"
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    assert {"kind": "KubeletConfiguration", "failCgroupV1": False} in patches


def test_the_flannel_manifest_runs_the_pinned_image_on_kinds_default_pod_subnet() -> None:
    docs = [d for d in yaml.safe_load_all((KIND / "flannel.yaml").read_text()) if d]
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    images = {c["image"] for c in ds["spec"]["template"]["spec"]["containers"]}
    assert images == {f"localhost/pfslayout/flannel:{versions()['FLANNEL_VERSION']}"}
    assert {c["imagePullPolicy"] for c in ds["spec"]["template"]["spec"]["containers"]} == {"Never"}
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and "net-conf.json" in d.get("data", {})]
    net = json.loads(cm["data"]["net-conf.json"])
    # node-image.sh replaces exactly this value by kind's template of the cluster's pod subnet
    assert net["Network"] == "10.244.0.0/16"
    assert net["Backend"]["Type"] == "host-gw"
    assert '"Network": "10.244.0.0/16"' in cm["data"]["net-conf.json"]


def test_the_kind_scripts_share_lib_sh_paths_and_pins() -> None:
    for script in ("cp-images.sh", "net-images.sh", "node-image.sh"):
        text = (KIND / script).read_text()
        assert "../cluster/lib.sh" in text, script  # the cache paths and pins come from lib.sh, not the script
    assert versions()["KIND_VERSION"].startswith("v0.")


def test_kind_sh_keeps_the_lock_from_podmans_daemons() -> None:
    # conmon and aardvark-dns outlive `kind create`; inheriting cluster.sh's lock (fd 8) they blocked `down`
    text = (REPO / "e2e" / "harness" / "cluster" / "kind.sh").read_text()
    create = text[text.index('"$KIND" create cluster'):]
    assert "8>&-" in create.split("\n\n")[0]


def test_docs_describe_every_kind_script() -> None:
    doc = (REPO / "docs" / "kind.md").read_text()
    for path in sorted(KIND.glob("*.sh")):
        assert path.name in doc, f"docs/kind.md does not mention {path.name}"
