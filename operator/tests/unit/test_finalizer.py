"""The finalizer named after the operator's scope, and taking over an earlier operator's (pure parts and
the Kopf event handler over a real kopf.Patch)."""

from __future__ import annotations

from typing import Any

import kopf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pfslayout.operator import finalizer, settings
from pfslayout.operator.handlers import finalizers as handler

LEGACY = finalizer.LEGACY


def test_every_namespace_keeps_the_original_name_and_scopes_get_their_own() -> None:
    assert finalizer.name(None) == LEGACY
    a, b = finalizer.name(("team-a-*",)), finalizer.name(("team-b-*",))
    assert a != b and a.startswith(LEGACY + "-") and b.startswith(LEGACY + "-")
    assert finalizer.name(("x", "y")) == finalizer.name(("y", "x", "y"))  # order and repeats do not matter
    # a qualified name the API server takes: prefix/name, the name at most 63 characters
    assert len(a.split("/", 1)[1]) <= 63


@given(st.lists(st.text(alphabet="abc-*", min_size=1, max_size=8), min_size=1, max_size=4))
def test_the_name_is_a_function_of_the_set_of_entries(entries: list[str]) -> None:
    assert finalizer.name(entries) == finalizer.name(sorted(set(entries), reverse=True))


def test_taking_over_replaces_the_earlier_one_in_place_and_keeps_the_rest() -> None:
    mine = finalizer.name(("ns-*",))
    other = finalizer.name(("other-*",))
    assert finalizer.adopted(["a/x", LEGACY, "b/y"], mine, deleting=False) == ["a/x", mine, "b/y"]
    assert finalizer.adopted([LEGACY, mine], mine, deleting=False) == [mine]
    assert finalizer.adopted([other, LEGACY], mine, deleting=False) == [mine]
    assert finalizer.adopted([mine, "a/x"], mine, deleting=False) is None  # nothing foreign
    assert finalizer.adopted(["pfslayout.io/finalizers-not-ours"], mine, deleting=False) is None
    # being deleted: a foreign one beside ours is dropped, alone it stays (no finalizer may be added now)
    assert finalizer.adopted([LEGACY, mine], mine, deleting=True) == [mine]
    assert finalizer.adopted([LEGACY], mine, deleting=True) is None


def body(finalizers: list[str], uid: str, deleting: bool = False) -> kopf.Body:
    meta: dict[str, Any] = {"name": "x", "namespace": "ns-1", "uid": uid, "finalizers": finalizers}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    raw: Any = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": meta}
    return kopf.Body(raw)


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str) -> None:
        self.lines.append(msg)

    warning = info


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    monkeypatch.setenv(settings.WATCH_NAMESPACES, "ns-*")
    posted: list[tuple[str, str, str]] = []
    monkeypatch.setattr(handler, "post", lambda b, t, r, m: posted.append((t, r, m)))
    return posted


def patched(b: kopf.Body, patch: kopf.Patch) -> list[str]:
    raw: Any = {"metadata": dict(b["metadata"])}
    for fn in patch.fns:
        fn(raw)
    return list(raw["metadata"]["finalizers"])


def test_the_handler_takes_over_in_kopfs_patch_and_stops_fighting_a_second_operator(
        served: list[tuple[str, str, str]]) -> None:
    mine = finalizer.name(("ns-*",))
    b = body([LEGACY], "uid-1")
    for _ in range(handler.ADOPTIONS):
        patch = kopf.Patch(body=b)
        handler.take_over(body=b, patch=patch, logger=Log())
        assert patched(b, patch) == [mine]
    # still there after ADOPTIONS take-overs: another operator serves the namespace; warn once, patch no more
    for _ in range(2):
        patch = kopf.Patch(body=b)
        handler.take_over(body=b, patch=patch, logger=Log())
        assert not patch.fns
    assert [(t, r) for t, r, _ in served] == [("Warning", "FinalizerConflict")]
    assert "watchNamespaces" in served[0][2]


def test_the_handler_leaves_an_object_deleted_before_it_was_served_and_says_so(
        served: list[tuple[str, str, str]]) -> None:
    b = body([LEGACY], "uid-2", deleting=True)
    patch = kopf.Patch(body=b)
    handler.take_over(body=b, patch=patch, logger=Log())
    assert not patch.fns
    assert served and served[0][1] == "FinalizerConflict" and "remove the finalizer by hand" in served[0][2]
    ok = body([finalizer.name(("ns-*",))], "uid-3")
    patch = kopf.Patch(body=ok)
    handler.take_over(body=ok, patch=patch, logger=Log())
    assert not patch.fns and len(served) == 1
