"""Files that existed before a layout changed (pure): what a rule's status says about them, and the
Events a change deserves.

Hints reach new files only. Every hint Job scans each rule's directory with `pfs-relayout` (the stale rule:
orangefs/relayout.py) and, for a rule with `migrate: true`, re-lays out up to 50 of those files by copying
each through libpvfs2 and renaming the copy over the original (a failed copy leaves the original). The
rule's `status.existingFiles` keeps the count, the first files, and what the last run migrated or could
not; a migration with files left runs again at the next poll while it makes progress.
"""

from __future__ import annotations

from typing import Any

from pfslayout.k8s.conditions import Event
from pfslayout.orangefs.relayout import Migrated, StaleReport

LISTED = 20  # files named in the status (the Job reports up to 100)


def _inside(mount: str, path: str) -> str:
    m = mount.rstrip("/")
    return path[len(m):] or "/" if path.startswith(m + "/") else path


def files_status(report: StaleReport | None, migrated: list[Migrated], unscanned: bool, mount: str, at: str,
                 previous: dict[str, Any] | None) -> dict[str, Any]:
    done = [m for m in migrated if m.ok]
    failed = [m for m in migrated if not m.ok]
    out: dict[str, Any] = {"checkedAt": at, "migratedTotal": int((previous or {}).get("migratedTotal") or 0)
                           + len(done)}
    if report is not None:
        out.update(olderLayout=report.count, scanned=report.scanned,
                   files=[_inside(mount, f.path) for f in report.files[:LISTED]])
    if unscanned:
        out["incomplete"] = True
    if done:
        out["migrated"] = len(done)
    if failed:
        out["failed"] = [{"path": _inside(mount, m.path), "reason": m.reason[:200]} for m in failed[:LISTED]]
    return out


def progress(files: dict[str, Any]) -> bool:
    """A migration that moved files and left some: worth another Job at the next poll."""
    return bool(files.get("migrated")) and int(files.get("olderLayout") or 0) > 0


def events(index: int, path: str, migrate: bool, files: dict[str, Any], previous: dict[str, Any] | None
           ) -> list[Event]:
    out: list[Event] = []
    where = f"spec.rules[{index}]"
    stale, before = int(files.get("olderLayout") or 0), int((previous or {}).get("olderLayout") or 0)
    if files.get("migrated"):
        out.append(Event("Normal", "FilesMigrated", f"{path}: {files['migrated']} existing files re-laid out to the "
                         f"current layout ({stale} left)"))
    for f in files.get("failed") or []:
        out.append(Event("Warning", "MigrationFailed", f"{where}.migrate: {f['path']} kept its layout "
                         f"({f['reason']}); the original is intact; fix the file's permissions or remove it"))
    if stale and not before and not migrate:
        out.append(Event("Normal", "OlderLayouts", f"{path}: {stale} existing files keep an older layout (new files "
                         f"get the current one); set {where}.migrate: true to re-lay them out"))
    if files.get("incomplete"):
        out.append(Event("Warning", "ScanIncomplete", f"{path}: some files could not be read while looking for "
                         "older layouts; the list may be short"))
    return out
