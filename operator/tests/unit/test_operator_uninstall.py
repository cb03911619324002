"""The chart's pre-delete hook (operator/uninstall.py): the operator stopped first, then only this release's
finalizer taken off the objects it serves. On the in-memory API fake (pfstestkit.fakekube); the e2e test
uninstalls a real release with objects present (e2e/tests/test_chart_install.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pfslayout.kinds import COST_CALIBRATION, LAYOUT_POLICY, ORANGEFS_CLUSTER
from pfslayout.operator import finalizer, uninstall
from pfstestkit.fakekube import FakeKube

SCOPE = ("team-*",)
MINE = finalizer.name(SCOPE)
OTHER_RELEASE = finalizer.name(("batch",))
SELECTOR = "app.kubernetes.io/instance=pfs,app.kubernetes.io/component=operator"


def obj(kind: str, namespace: str, name: str, finalizers: list[str]) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "finalizers": finalizers}}


def finalizers_of(kube: FakeKube, kind: str, namespace: str, name: str) -> list[str]:
    got = kube.get(kind, namespace, name)
    assert got is not None
    return list(got["metadata"].get("finalizers") or [])


def test_without_takes_only_mine() -> None:
    assert uninstall.without([MINE, "example.com/keep"], MINE) == ["example.com/keep"]
    assert uninstall.without([OTHER_RELEASE], MINE) is None
    assert uninstall.without([], MINE) is None


def test_only_this_releases_finalizer_in_served_namespaces_is_removed() -> None:
    kube = FakeKube()
    kube.put(obj("OrangeFSCluster", "team-a", "fs", [MINE, "example.com/keep"]))
    kube.put(obj("CostCalibration", "team-a", "cal", [MINE]))
    kube.put(obj("LayoutPolicy", "team-b", "lp", [MINE]))
    kube.put(obj("LayoutPolicy", "team-b", "plain", []))
    kube.put(obj("OrangeFSCluster", "batch", "theirs", [OTHER_RELEASE]))  # another release's scope
    kube.put(obj("CostCalibration", "other", "stray", [MINE]))  # outside the scope: not this release's to touch
    done = uninstall.release_objects(kube, SCOPE)
    assert done == {"OrangeFSCluster": 1, "CostCalibration": 1, "LayoutPolicy": 1}
    assert finalizers_of(kube, "OrangeFSCluster", "team-a", "fs") == ["example.com/keep"]
    assert finalizers_of(kube, "CostCalibration", "team-a", "cal") == []
    assert finalizers_of(kube, "LayoutPolicy", "team-b", "lp") == []
    assert finalizers_of(kube, "OrangeFSCluster", "batch", "theirs") == [OTHER_RELEASE]
    assert finalizers_of(kube, "CostCalibration", "other", "stray") == [MINE]
    assert uninstall.release_objects(kube, SCOPE) == dict.fromkeys(("OrangeFSCluster", "CostCalibration",
                                                                    "LayoutPolicy"), 0)  # idempotent
    assert [r.kind for r in uninstall.KINDS] == [ORANGEFS_CLUSTER.kind, COST_CALIBRATION.kind, LAYOUT_POLICY.kind]


def test_every_namespace_scope_uses_the_original_name() -> None:
    kube = FakeKube()
    kube.put(obj("LayoutPolicy", "anywhere", "lp", [finalizer.LEGACY]))
    assert uninstall.release_objects(kube, None) == {"OrangeFSCluster": 0, "CostCalibration": 0, "LayoutPolicy": 1}
    assert finalizers_of(kube, "LayoutPolicy", "anywhere", "lp") == []


def operator_pods(kube: FakeKube) -> None:
    kube.put({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1},
              "metadata": {"name": "pfs", "namespace": "sys"}})
    for i in range(2):
        kube.put({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"pfs-{i}", "namespace": "sys",
            "labels": {"app.kubernetes.io/instance": "pfs", "app.kubernetes.io/component": "operator"}}})


def test_the_operator_is_stopped_before_anything_else() -> None:
    kube = FakeKube()
    operator_pods(kube)
    slept: list[float] = []

    def controller(seconds: float) -> None:  # the Deployment's controller removes one pod per wait
        slept.append(seconds)
        pods = kube.list("Pod", "sys", SELECTOR)
        kube.delete("Pod", "sys", pods[0]["metadata"]["name"])

    uninstall.stop_operator(kube, "sys", "pfs", SELECTOR, timeout=60, sleep=controller)
    deployment = kube.get("Deployment", "sys", "pfs")
    assert deployment is not None and deployment["spec"]["replicas"] == 0
    assert len(slept) == 2 and kube.list("Pod", "sys", SELECTOR) == []


def test_pods_that_do_not_go_are_named() -> None:
    kube = FakeKube()
    operator_pods(kube)
    with pytest.raises(TimeoutError, match=r"pfs-0, pfs-1.*deployment sys/pfs"):
        uninstall.stop_operator(kube, "sys", "pfs", SELECTOR, timeout=0, sleep=lambda _: None)


def test_a_bad_scope_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = uninstall.main(["--namespace", "sys", "--deployment", "pfs", "--selector", SELECTOR,
                           "--watch-namespaces", "Team_A"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "PFSLAYOUT_WATCH_NAMESPACES" in err, err
