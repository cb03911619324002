"""Real pods on the test cluster: where they go and how a test proves they really ran.

On the local control plane one real node (containerd + kubelet, e2e/harness/cluster/node.sh) sits beside the kwok
nodes. It is labelled and tainted `pfslayout.io/real-node=true`, so nothing lands on it by accident:
whatever must really run carries `REAL_NODE_PLACEMENT` (a node selector and a toleration). On kind every
node is real and the placement is empty.

Also a command: `python e2e/testkit/pfstestkit/real.py place [local|kind] < manifests.yaml` prints the manifests with
that placement added to every OrangeFSCluster spec and MPIJob pod template (the demo uses it; the example
files in policies/ stay free of test-cluster details).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

REAL_NODE_LABEL = "pfslayout.io/real-node"
REAL_NODE_PLACEMENT: dict[str, Any] = {
    "nodeSelector": {REAL_NODE_LABEL: "true"},
    "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
}
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# The taint of kind's kwok nodes (e2e/harness/cluster/kwok/nodes.sh): a pod tolerating it may land on a fake node.
KWOK_TAINT: dict[str, Any] = {"key": "pfslayout.io/fake-node", "value": "true", "effect": "NoSchedule"}
KWOK_TOLERATION: dict[str, Any] = {"key": KWOK_TAINT["key"], "operator": "Exists", "effect": KWOK_TAINT["effect"]}


def placement(mode: str) -> dict[str, Any]:
    """nodeSelector/tolerations that put a pod on a node that really runs it."""
    return copy.deepcopy(REAL_NODE_PLACEMENT) if mode == "local" else {}


def place(doc: dict[str, Any], mode: str) -> dict[str, Any]:
    """`doc` with the real-node placement merged into where its kind keeps pod placement."""
    extra = placement(mode)
    if not extra or not isinstance(doc, dict):
        return doc
    doc = copy.deepcopy(doc)
    kind = doc.get("kind")
    targets: list[dict[str, Any]] = []
    if kind == "OrangeFSCluster":
        targets.append(doc.setdefault("spec", {}))
    elif kind == "MPIJob":
        for replica in (doc.get("spec", {}).get("mpiReplicaSpecs") or {}).values():
            targets.append(replica.setdefault("template", {}).setdefault("spec", {}))
    elif kind in ("Pod",):
        targets.append(doc.setdefault("spec", {}))
    elif kind in ("Deployment", "StatefulSet", "Job"):
        targets.append(doc.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {}))
    for spec in targets:
        spec.setdefault("nodeSelector", {}).update(extra["nodeSelector"])
        tolerations = spec.setdefault("tolerations", [])
        for t in extra["tolerations"]:
            if t not in tolerations:
                tolerations.append(t)
    return doc


def kwok_chart_values() -> list[str]:
    """`helm --set-json` arguments placing the chart's pods on a kwok node, where kwok plays them and no
    process starts (any cluster: the kwok nodes are labelled `type: kwok`; on kind they carry a taint only
    such pods tolerate, e2e/harness/cluster/kwok/nodes.sh)."""
    return ["--set-json", f"nodeSelector={json.dumps({'type': 'kwok'})}",
            "--set-json", f"tolerations={json.dumps([KWOK_TOLERATION])}"]


def chart_values(mode: str) -> list[str]:
    """`helm --set-json` arguments placing the chart's pods (operator, `helm test`) on a real node."""
    extra = placement(mode)
    if not extra:
        return []
    return ["--set-json", f"nodeSelector={json.dumps(extra['nodeSelector'])}",
            "--set-json", f"tolerations={json.dumps(extra['tolerations'])}"]


def image_build(state_dir: str | Path, name: str) -> str:
    """The content key of the image `name` the real node imported (its archive's name) or, on kind, of the
    digest pushed to the registry; "" when neither is known.
    A chart installed with it as a pod annotation rolls its pods when the image was rebuilt: the tag
    (`dev`) stays the same, so nothing else would."""
    listing = Path(state_dir) / "node" / "images.list"
    if not listing.exists():
        # kind: the digest `up` (or `cluster.sh images`) pushed
        ref = next((r for n, r in pushed_images(state_dir).items() if n.endswith(name)), "")
        return ref.rpartition("@sha256:")[2][:16]
    for line in listing.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].endswith(name):
            return Path(parts[1]).stem
    return ""


def pushed_images(state_dir: str | Path) -> dict[str, str]:
    """The images `up` pushed to the test cluster's registry: image name (as pods and containerd name it,
    docker.io/pfslayout/<name>:<tag>) -> the reference pushed, `<registry>/<repository>:<tag>@<digest>`
    (images/build.sh --push, recorded by e2e/harness/cluster/node.sh). Empty without a real node."""
    listing = Path(state_dir) / "node" / "images.pushed"
    if not listing.exists():
        return {}
    return dict(line.split() for line in listing.read_text().splitlines() if len(line.split()) == 2)


def real_node_names(cluster: Any) -> set[str]:
    """Nodes whose pods really run: every node kwok does not play."""
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    return {n["metadata"]["name"] for n in nodes
            if KWOK_ANNOTATION not in (n["metadata"].get("annotations") or {})}


def assert_real_pods(cluster: Any, pods: list[dict[str, Any]]) -> None:
    """Fails when a pod a real-execution test relies on is not on a real node (kwok would only have
    pretended to run it)."""
    real = real_node_names(cluster)
    assert pods, "no pods to check"
    for pod in pods:
        node = pod["spec"].get("nodeName")
        assert node in real, (f"pod {pod['metadata']['namespace']}/{pod['metadata']['name']} is on node "
                              f"{node!r}, which kwok plays (real nodes: {sorted(real)}): it did not really run")


def operator_chart_values(mode: str, state_dir: str | Path) -> list[str]:
    """Helm arguments for the chart's in-cluster operator on the test cluster: the image the harness built
    (`pfslayout/operator:dev`, never pulled from elsewhere), its pods on a node that runs them, and the
    image's build key as a pod annotation (a rebuilt `dev` image rolls the pod)."""
    values = ["--set", "image.repository=pfslayout/operator", "--set", "image.tag=dev",
              "--set", "image.pullPolicy=IfNotPresent", *chart_values(mode)]
    key = image_build(state_dir, "operator:dev")
    if key:
        values += ["--set-string", f"podAnnotations.pfslayout\\.io/image-build={key}"]
    return values


USAGE = ("usage: real.py place [local|kind] < manifests.yaml | real.py chart-values local|kind STATE_DIR"
         " | real.py mode STATE_DIR")


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "place":
        mode = argv[2] if len(argv) > 2 else "local"
        docs = [place(d, mode) for d in yaml.safe_load_all(sys.stdin) if d]
        yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
        return 0
    if len(argv) == 4 and argv[1] == "chart-values":
        # one argument per line, nothing at all when there are none (bash: mapfile -t)
        sys.stdout.write("".join(f"{a}\n" for a in operator_chart_values(argv[2], argv[3])))
        return 0
    if len(argv) == 3 and argv[1] == "mode":
        # the shell's view of pfstestkit.cluster.cluster_mode (the demo): local or kind, 1 when neither says
        from pfstestkit.cluster import cluster_mode

        recorded = cluster_mode(Path(argv[2]))
        if recorded is None:
            print(f"real.py mode: {argv[2]} records no cluster (run e2e/harness/cluster.sh up)", file=sys.stderr)
            return 1
        print(recorded)
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
