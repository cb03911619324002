"""What a LayoutPolicy rule says about files that existed before its layout (kinds/layoutpolicy/existing.py),
in one Job or over a pass of pages."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given, settings, strategies

from pfslayout.kinds.layoutpolicy.existing import LISTED, events, files_status, progress, resume_after
from pfslayout.orangefs.relayout import Migrated, Page, StaleFile, StaleReport

M = "/mnt/orangefs"


def report(n: int, scanned: int = 10) -> StaleReport:
    return StaleReport(n, scanned, [StaleFile(f"{M}/d/f{i}", 1, "simple_stripe", 65536) for i in range(n)])


def test_a_scan_lists_files_inside_the_file_system_and_suggests_migrate() -> None:
    st = files_status(report(3), [], False, M, "t", None)
    assert st == {"checkedAt": "t", "migratedTotal": 0, "olderLayout": 3, "scanned": 10,
                  "files": ["/d/f0", "/d/f1", "/d/f2"]}
    evs = events(2, "/d", False, st, None)
    assert [e.reason for e in evs] == ["OlderLayouts"] and "spec.rules[2].migrate: true" in evs[0].message
    assert events(2, "/d", False, st, st) == []  # said once, not at every drift check
    assert not progress(st)


def test_a_migration_counts_reports_failures_and_continues_while_it_progresses() -> None:
    mig = [Migrated(f"{M}/d/a", True, 1, 4), Migrated(f"{M}/d/b", False, reason="read: permission denied")]
    st = files_status(report(1, 5), mig, False, M, "t", {"migratedTotal": 7})
    assert st["migrated"] == 1 and st["migratedTotal"] == 8 and st["failed"] == [
        {"path": "/d/b", "reason": "read: permission denied"}]
    assert progress(st)
    reasons = [e.reason for e in events(0, "/d", True, st, None)]
    assert reasons == ["FilesMigrated", "MigrationFailed"]
    msg = events(0, "/d", True, st, None)[1].message
    assert msg.startswith("spec.rules[0].migrate: /d/b kept its layout") and "original is intact" in msg
    done = files_status(report(0, 5), [Migrated(f"{M}/d/c", True, 1, 4)], False, M, "t", st)
    assert not progress(done) and done["olderLayout"] == 0


def test_an_unreadable_scan_is_flagged() -> None:
    st = files_status(None, [], True, M, "t", None)
    assert st["incomplete"] is True and "olderLayout" not in st
    assert [e.reason for e in events(0, "/d", False, st, None)] == ["ScanIncomplete"]


def stale(*names: str) -> tuple[StaleFile, ...]:
    return tuple(StaleFile(f"{M}/d/{n}", 1, "simple_stripe", 65536) for n in names)


def test_a_scan_in_pages_keeps_the_last_complete_pass_until_it_ends() -> None:
    complete = files_status(report(2, 8), [], False, M, "t0", None)
    assert resume_after(complete) == ""  # a new pass starts at the beginning
    first = files_status(None, [], False, M, "t1", complete, Page(1, 500, "a/f0499", stale("a/f0007")))
    assert first["scanning"] == {"after": "a/f0499", "olderLayout": 1, "scanned": 500, "pages": 1,
                                 "files": ["/d/a/f0007"]}
    # Mid-pass, what the rule says about the directory is still the last complete pass.
    assert (first["olderLayout"], first["scanned"], first["files"]) == (2, 8, ["/d/f0", "/d/f1"])
    assert progress(first) and resume_after(first) == "a/f0499"
    second = files_status(None, [], False, M, "t2", first, Page(0, 500, "b/f0999"))
    third = files_status(None, [], False, M, "t3", second, Page(3, 500, "c/f0100", stale("c/f1", "c/f2", "c/f3")))
    assert third["scanning"] == {"after": "c/f0100", "olderLayout": 4, "scanned": 1500, "pages": 3,
                                 "files": ["/d/a/f0007", "/d/c/f1", "/d/c/f2", "/d/c/f3"]}
    assert resume_after(third) == "c/f0100" and third["olderLayout"] == 2
    # No Event per page: OlderLayouts when a pass ends, as for a scan in one Job.
    for before, now in ((complete, first), (first, second), (second, third)):
        assert events(0, "/d", False, now, before) == []

    last = files_status(StaleReport(2, 120, list(stale("d/x", "d/y"))), [], False, M, "t4", third)
    assert "scanning" not in last and not progress(last) and resume_after(last) == ""
    assert (last["olderLayout"], last["scanned"]) == (6, 1620)
    assert last["files"] == ["/d/a/f0007", "/d/c/f1", "/d/c/f2", "/d/c/f3", "/d/d/x", "/d/d/y"]
    assert [e.reason for e in events(0, "/d", False, last, third)] == []  # the last pass already had some
    fresh = files_status(StaleReport(2, 120, list(stale("d/x", "d/y"))), [], False, M, "t4",
                         {k: v for k, v in third.items() if k not in ("olderLayout", "scanned", "files")})
    assert [e.reason for e in events(0, "/d", False, fresh, {})] == ["OlderLayouts"]
    assert "6 existing files" in events(0, "/d", False, fresh, {})[0].message


def test_a_first_pass_in_pages_says_nothing_until_it_ends() -> None:
    first = files_status(None, [], False, M, "t1", None, Page(1, 500, "f0499", stale("f0001")))
    assert "olderLayout" not in first and first["scanning"]["pages"] == 1 and progress(first)
    assert events(0, "/d", False, first, None) == []


def test_a_migration_in_pages_does_not_quote_an_old_count_as_left() -> None:
    before = files_status(report(9, 9), [], False, M, "t0", None)
    st = files_status(None, [Migrated(f"{M}/d/f0", True, 1, 4)], False, M, "t1", before, Page(0, 500, "f0499"))
    evs = events(0, "/d", True, st, before)
    assert [e.reason for e in evs] == ["FilesMigrated"] and "9 left" not in evs[0].message
    assert st["migratedTotal"] == 1 and progress(st)


def test_a_pass_lists_its_first_files_whatever_the_pages() -> None:
    # 30 stale files found over 4 pages: the status names the first LISTED in walk order, as one Job would.
    names = [f"f{i:02d}" for i in range(30)]
    st = files_status(None, [], False, M, "t", None, Page(10, 10, "f09", stale(*names[:10])))
    st = files_status(None, [], False, M, "t", st, Page(5, 5, "f14", stale(*names[10:15])))
    st = files_status(None, [], False, M, "t", st, Page(10, 10, "f24", stale(*names[15:25])))
    assert len(st["scanning"]["files"]) == LISTED
    done = files_status(StaleReport(5, 5, list(stale(*names[25:]))), [], False, M, "t", st)
    one = files_status(StaleReport(30, 30, list(stale(*names))), [], False, M, "t", None)
    assert {k: done[k] for k in ("olderLayout", "scanned", "files")} == \
        {k: one[k] for k in ("olderLayout", "scanned", "files")}


@settings(max_examples=200, deadline=None)
@given(found=strategies.lists(strategies.booleans(), min_size=1, max_size=60),
       cuts=strategies.lists(strategies.integers(1, 60), max_size=6))
def test_pages_sum_to_the_pass_in_one(found: list[bool], cuts: list[int]) -> None:
    """However a pass is cut into pages, its end says what a scan in one Job would have said."""
    files = [f"f{i:02d}" for i in range(len(found))]
    bounds = [0, *sorted({c for c in cuts if c < len(files)}), len(files)]
    pages = [(files[a:b], found[a:b]) for a, b in pairwise(bounds)]

    def piece(part: list[str], hit: list[bool]) -> tuple[int, tuple[StaleFile, ...]]:
        return sum(hit), stale(*(f for f, h in zip(part, hit) if h))

    status: dict[str, Any] | None = None
    for part, hit in pages[:-1]:
        n, listed = piece(part, hit)
        status = files_status(None, [], False, M, "t", status, Page(n, len(part), part[-1], listed))
        assert progress(status) and resume_after(status) == part[-1]
    n, listed = piece(*pages[-1])
    done = files_status(StaleReport(n, len(pages[-1][0]), list(listed)), [], False, M, "t", status)
    n, listed = piece(files, found)
    one = files_status(StaleReport(n, len(files), list(listed)), [], False, M, "t", None)
    assert done == one
