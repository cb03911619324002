"""The CRDs on a real API server: accepted by it (structural schema, CEL compiled within the cost
budget), defaults filled in, short names, printer columns, status subresource, and allowed updates."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import config

from pfslayout.k8s import follow
from pfslayout.k8s.api import Kube
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfstestkit import REPO
from pfstestkit.crd_release import CRDS, crd_namespace, install_crds

ACCEPTED = REPO / "e2e" / "tests" / "invalid" / "accepted"


@pytest.fixture(scope="module")
def crds(cluster) -> None:  # noqa: ANN001 - the `cluster` fixture of e2e/tests/conftest.py
    install_crds(cluster)


@pytest.fixture(scope="module")
def ns(cluster, crds) -> Iterator[str]:  # noqa: ANN001
    with crd_namespace(cluster, "crds", served=False) as name:
        yield name


def test_api_server_accepts_crds_as_structural_and_established(cluster, crds) -> None:  # noqa: ANN001
    for name in CRDS:
        crd = cluster.kubectl_json("get", "crd", name)
        conditions = {c["type"]: c for c in crd["status"]["conditions"]}
        assert conditions["Established"]["status"] == "True"
        assert conditions["NamesAccepted"]["status"] == "True"
        # A non-structural schema or a CEL rule over the cost budget shows up here.
        assert conditions.get("NonStructuralSchema", {}).get("status") != "True", conditions


def test_short_names_and_category_resolve(cluster, ns: str) -> None:  # noqa: ANN001
    for short in CRDS.values():
        cluster.kubectl("get", short, "-n", ns)
    out = cluster.kubectl("api-resources", "--api-group=pfslayout.io", "-o", "wide").stdout
    for name, short in CRDS.items():
        assert name.split(".")[0] in out and short in out
    cluster.kubectl("get", "pfslayout", "-n", ns)


def test_defaults_are_filled_in_by_the_api_server(cluster, ns: str) -> None:  # noqa: ANN001
    cluster.kubectl("create", "-n", ns, "-f", str(ACCEPTED / "orangefscluster-minimal.yaml"))
    spec = cluster.kubectl_json("get", "ofs", "minimal", "-n", ns)["spec"]
    assert spec["servers"] == {"count": 4, "spread": "Auto"}
    assert spec["storage"] == {"type": "emptyDir"}
    assert spec["fs"] == {"name": "orangefs", "syncData": True}
    assert spec["ports"] == {"tcp": 3334}
    assert spec["distribution"] == {"name": "simple_stripe", "stripSize": 65536, "numDatafiles": 0}
    assert spec["reclaimPolicy"] == "Retain"
    assert spec["client"] == {"enabled": True, "replicas": 1, "mountPath": "/mnt/orangefs"}
    assert spec["calibration"] == {"auto": True, "profile": "quick"}
    # No image is stored: the operator's (the chart's images.orangefs) applies, and moves with the release.
    assert "image" not in spec

    cc = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "CostCalibration", "metadata": {"name": "defaults"},
          "spec": {"clusterRef": {"name": "minimal"}}}
    cluster.apply(cc, namespace=ns)
    grid = cluster.kubectl_json("get", "cc", "defaults", "-n", ns)["spec"]["grid"]
    assert grid["operations"] == ["write", "read"] and grid["patterns"] == ["sequential", "random"]
    assert grid["repetitions"] == 5 and len(grid["requestSizes"]) >= 2 and "maxConfigs" not in grid

    lp = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "defaults"},
          "spec": {"clusterRef": {"name": "minimal"},
                   "rules": [{"path": "/a", "mode": "hybrid", "hybrid": {"replicas": [
                       {"name": "dh", "layout": "1-DH"}, {"name": "dv", "layout": "1-DV"}]}}]}}
    cluster.apply(lp, namespace=ns)
    got = cluster.kubectl_json("get", "lp", "defaults", "-n", ns)["spec"]
    assert got["hybridThreshold"] == 0.1
    assert got["rules"][0]["fileSharing"] == "perProcess"
    assert [r["stripSize"] for r in got["rules"][0]["hybrid"]["replicas"]] == [65536, 65536]
    assert got["trace"]["enabled"] is False and got["shim"]["enabled"] is True


def test_printer_columns(cluster, ns: str) -> None:  # noqa: ANN001
    cluster.kubectl("apply", "-n", ns, "-f", str(ACCEPTED / "orangefscluster-hostpath.yaml"))
    table = cluster.kubectl("get", "ofs", "hostpath", "-n", ns).stdout.splitlines()
    head, row = table[0].split(), table[1].split()
    assert head[:6] == ["NAME", "SERVERS", "READY-SERVERS", "PHASE", "FS", "STORAGE"]
    assert row[0] == "hostpath" and row[1] == "8" and "orangefs" in row and "hostPath" in row


def test_status_subresource_and_conditions(cluster, ns: str) -> None:  # noqa: ANN001
    cluster.kubectl("apply", "-n", ns, "-f", str(ACCEPTED / "orangefscluster-full.yaml"))
    obj = cluster.kubectl_json("get", "ofs", "full", "-n", ns)
    gen = obj["metadata"]["generation"]
    status = {"status": {"phase": "Ready", "readyServers": 4, "servers": 4, "fsId": 424242,
                         "observedGeneration": gen,
                         "conditions": [{"type": "Ready", "status": "True", "reason": "AllServersReady",
                                         "message": "4/4 servers ready", "observedGeneration": gen,
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    cluster.kubectl("patch", "ofs", "full", "-n", ns, "--subresource=status", "--type=merge",
                    "-p", json.dumps(status))
    # Status written through the main resource is ignored (status subresource semantics).
    cluster.kubectl("patch", "ofs", "full", "-n", ns, "--type=merge", "-p", '{"status": {"phase": "Failed"}}')
    got = cluster.kubectl_json("get", "ofs", "full", "-n", ns)
    assert got["status"]["phase"] == "Ready" and got["status"]["observedGeneration"] == gen
    assert got["metadata"]["generation"] == gen
    row = cluster.kubectl("get", "ofs", "full", "-n", ns, "--no-headers").stdout.split()
    assert row[1:4] == ["4", "4", "Ready"] and "True" in row
    cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", "ofs/full", "--timeout=10s")
    bad = {"status": {"conditions": [{"type": "Ready", "status": "Maybe", "reason": "X", "message": "",
                                      "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    proc = cluster.kubectl("patch", "ofs", "full", "-n", ns, "--subresource=status", "--type=merge",
                           "-p", json.dumps(bad), check=False)
    assert proc.returncode != 0 and "status.conditions[0].status" in proc.stderr


def test_mutable_fields_can_change(cluster, ns: str) -> None:  # noqa: ANN001
    """Immutability is targeted: scaling and changing the default distribution are accepted."""
    doc = yaml.safe_load((ACCEPTED / "orangefscluster-minimal.yaml").read_text())
    doc["metadata"]["name"] = "scalable"
    cluster.apply(doc, namespace=ns)
    doc["spec"]["servers"] = {"count": 6}
    doc["spec"]["distribution"] = {"name": "twod_stripe", "numGroups": 3, "stripSize": 1048576}
    doc["spec"]["reclaimPolicy"] = "Delete"
    cluster.apply(doc, namespace=ns)
    spec = cluster.kubectl_json("get", "ofs", "scalable", "-n", ns)["spec"]
    assert spec["servers"]["count"] == 6 and spec["distribution"]["numGroups"] == 3


def test_explain_shows_field_descriptions(cluster, crds) -> None:  # noqa: ANN001
    out = cluster.kubectl("explain", "orangefsclusters.spec.storage.type").stdout
    assert "hostPath" in out and "emptyDir" in out
    out = cluster.kubectl("explain", "layoutpolicies.spec.hybridThreshold").stdout
    assert "δ" in out or "runner-up" in out


def test_status_rewrite_removes_what_a_nested_object_no_longer_has(cluster, ns: str) -> None:  # noqa: ANN001
    """The reconcilers write status with `merge_patch`: a re-calibration whose fit drops `e_write` must
    leave no `e_write` from the run before in `status.params` or `status.fit` (a plain merge patch keeps
    it — the API server's behaviour, checked here too, is why the helper exists)."""
    from pfslayout.k8s.custom import merge_patch

    cluster.kubectl("apply", "-n", ns, "-f", str(ACCEPTED / "costcalibration.yaml"))
    name = yaml.safe_load((ACCEPTED / "costcalibration.yaml").read_text())["metadata"]["name"]
    run1 = {"phase": "Succeeded", "run": 1,
            "params": {"e": 2e-5, "e_write": 5e-5, "v": 1e-9, "alpha_seq": 1e-4, "alpha_rand": 2e-4, "beta": 1e-9},
            "fit": {"rank": 6, "identified": {"e": True, "e_write": True, "v": True}, "warnings": ["a"]}}
    run2 = {"phase": "Succeeded", "run": 2,
            "params": {"e": 3e-5, "v": 1e-9, "alpha_seq": 1e-4, "alpha_rand": 2e-4, "beta": 1e-9},
            "fit": {"rank": 5, "identified": {"e": True, "v": True}, "warnings": []}}

    def write(patch: dict) -> dict:
        cluster.kubectl("patch", "cc", name, "-n", ns, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": patch}))
        return dict(cluster.kubectl_json("get", "cc", name, "-n", ns)["status"])

    assert write(merge_patch({}, run1)) == run1
    plain = write(run2)  # what the reconcilers did before: the previous run's e_write survives
    assert plain["params"]["e_write"] == 5e-5 and plain["fit"]["identified"]["e_write"] is True
    assert write(merge_patch(plain, run2)) == run2
    assert merge_patch(run2, run2) == {}  # nothing changed: the reconcilers skip the write


def test_a_follower_lists_in_pages_once_then_watches_on_across_server_timeouts(
        cluster, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """k8s/follow.py on this API server (the webhook's policy copy and the MPIJob wake-ups use it): the LIST
    comes in pages, and a watch the server ends (timeoutSeconds) goes on from its last version — the
    objects made and deleted after two such ends arrive, and nothing was listed a second time."""
    monkeypatch.setattr(follow, "PAGE", 2)
    minimal = yaml.safe_load((ACCEPTED / "orangefscluster-minimal.yaml").read_text())

    def make(name: str) -> None:
        cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(
            {**minimal, "metadata": {"name": name}}))
    for i in range(5):
        make(f"follow-{i}")
    listings: list[list[str]] = []
    changes: list[tuple[str, bool]] = []
    follower = follow.Follower(OFS, lambda items: listings.append(sorted(o["metadata"]["name"] for o in items)),
                               lambda body, deleted: changes.append((body["metadata"]["name"], deleted)),
                               lambda namespace: namespace == ns)
    kube = Kube(config.new_client_from_config(str(cluster.kubeconfig)))
    stop = follow.start(kube, follower, timeout_s=2, retry_s=1)
    try:
        cluster.wait_until(lambda: listings or None, "the first listing", timeout=30, interval=0.2)
        time.sleep(5)  # the server ends the watch twice meanwhile
        make("follow-5")
        cluster.kubectl("delete", "orangefsclusters.pfslayout.io", "follow-0", "-n", ns, "--wait=false")
        cluster.wait_until(lambda: {("follow-5", False), ("follow-0", True)} <= set(changes) or None,
                           "the create and the delete after the timeouts", timeout=30, interval=0.2)
    finally:
        stop.set()
    # one listing (the module's other tests leave objects of their own in the namespace)
    assert len(listings) == 1 and [n for n in listings[0] if n.startswith("follow-")] == [
        f"follow-{i}" for i in range(5)], listings
