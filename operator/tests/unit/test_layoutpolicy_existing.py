"""What a LayoutPolicy rule says about files that existed before its layout (kinds/layoutpolicy/existing.py)."""

from __future__ import annotations

from pfslayout.kinds.layoutpolicy.existing import events, files_status, progress
from pfslayout.orangefs.relayout import Migrated, StaleFile, StaleReport

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
