"""The admission webhook's copy of the LayoutPolicies (admission/review.py `PolicyCache`): watch events
and LISTs merged so that a review needs no API call and a deleted policy does not linger."""

from __future__ import annotations

from typing import Any

from pfslayout.operator.admission.policy_cache import PolicyCache


def lp(ns: str, name: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}, "spec": {}}


def names(cache: PolicyCache, ns: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in cache.in_namespace(ns) or [])


def test_unseeded_means_ask_the_api() -> None:
    cache = PolicyCache()
    cache.put(lp("a", "x"))
    assert cache.in_namespace("a") is None  # the handler then LISTs
    cache.merge_listing([], gone=lambda ns, n: False)
    assert names(cache, "a") == ["x"] and cache.in_namespace("b") == []


def test_events_win_over_an_older_listing_and_deletions_are_confirmed() -> None:
    cache = PolicyCache()
    cache.merge_listing([lp("a", "x"), lp("a", "y")], gone=lambda ns, n: True)
    cache.put(lp("a", "x", rv="2"))   # a newer version from the watch
    cache.put(lp("b", "new"))         # created after the LIST below was taken
    confirmed: list[tuple[str, str]] = []

    def gone(ns: str, n: str) -> bool:
        confirmed.append((ns, n))
        return n == "y"  # y really is gone; "new" exists (the LIST predates it)
    cache.merge_listing([lp("a", "x", rv="1")], gone=gone)
    assert names(cache, "a") == ["x"] and names(cache, "b") == ["new"]
    assert (cache.in_namespace("a") or [])[0]["metadata"]["resourceVersion"] == "2"
    assert sorted(confirmed) == [("a", "y"), ("b", "new")]
    cache.drop("b", "new")
    assert names(cache, "b") == [] and len(cache) == 1


def test_the_watchs_listing_replaces_the_copy_whole() -> None:
    """policy_watch.py lists, then watches from that list: what the list lacks is gone (a deletion the
    thread missed while its watch was down), and the copy is seeded."""
    cache = PolicyCache()
    cache.put(lp("a", "stale"))
    cache.replace([lp("a", "x", rv="5"), lp("b", "y")])
    assert names(cache, "a") == ["x"] and names(cache, "b") == ["y"]
    assert (cache.in_namespace("a") or [{}])[0]["metadata"]["resourceVersion"] == "5"
    cache.replace([])
    assert cache.in_namespace("a") == [] and len(cache) == 0
