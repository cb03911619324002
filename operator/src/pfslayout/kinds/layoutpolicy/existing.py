"""Files that existed before a layout changed (pure): what a rule's status says about them, and the
Events a change deserves.

Hints reach new files only. Every hint Job scans each rule's directory with `pfs-relayout` (the stale rule:
orangefs/relayout.py) and, for a rule with `migrate: true`, re-lays out up to 50 of those files by copying
each through libpvfs2 and renaming the copy over the original (a failed copy leaves the original). The
rule's `status.existingFiles` keeps the count, the first files, and what the last run migrated or could
not; a migration with files left runs again at the next poll while it makes progress.

A large directory is scanned in pages (orangefs/relayout.py: a Job compares a bounded number of files
and says where it stopped). Until a pass's last page, `scanning` holds the pass under way (its cursor,
sums and first files) and the figures above stay the last complete pass's; the last page folds the
sums into them. The caller passes `resume_after(previous)` to the next Job, and drops `scanning` from
`previous` when it starts a pass afresh instead (the sums would otherwise mix two passes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pfslayout.k8s.conditions import Event
from pfslayout.orangefs.relayout import Migrated, Page, StaleFile, StaleReport

LISTED = 20  # files named in the status (the Job reports up to 100)


def _inside(mount: str, path: str) -> str:
    m = mount.rstrip("/")
    return path[len(m):] or "/" if path.startswith(m + "/") else path


def _listed(mount: str, before: list[str], files: Sequence[StaleFile]) -> list[str]:
    """The first files of a pass: the earlier pages' and then this one's (pages come in walk order)."""
    return (list(before) + [_inside(mount, f.path) for f in files])[:LISTED]


def files_status(report: StaleReport | None, migrated: list[Migrated], unscanned: bool, mount: str, at: str,
                 previous: dict[str, Any] | None, page: Page | None = None) -> dict[str, Any]:
    """`report`: the directory's count line (a whole pass, or the last page of one); `page`: a page that
    ends elsewhere (the pass goes on); neither: not scanned."""
    prev = previous or {}
    done = [m for m in migrated if m.ok]
    failed = [m for m in migrated if not m.ok]
    out: dict[str, Any] = {"checkedAt": at, "migratedTotal": int(prev.get("migratedTotal") or 0) + len(done)}
    going: dict[str, Any] = prev.get("scanning") or {}
    stale, scanned = int(going.get("olderLayout") or 0), int(going.get("scanned") or 0)
    if page is not None:
        # What the status says about the directory stays the last complete pass's until this one ends.
        out.update({k: prev[k] for k in ("olderLayout", "scanned", "files") if k in prev})
        out["scanning"] = {"after": page.after, "olderLayout": stale + page.stale, "scanned": scanned + page.scanned,
                           "pages": int(going.get("pages") or 0) + 1,
                           "files": _listed(mount, going.get("files") or [], page.files)}
    elif report is not None:
        out.update(olderLayout=stale + report.count, scanned=scanned + report.scanned,
                   files=_listed(mount, going.get("files") or [], report.files))
    if unscanned:
        out["incomplete"] = True
    if done:
        out["migrated"] = len(done)
    if failed:
        out["failed"] = [{"path": _inside(mount, m.path), "reason": m.reason[:200]} for m in failed[:LISTED]]
    return out


def progress(files: dict[str, Any]) -> bool:
    """A scan in pages not at its end yet, or a migration that moved files and left some: worth another
    Job at the next poll."""
    if files.get("scanning"):
        return True
    return bool(files.get("migrated")) and int(files.get("olderLayout") or 0) > 0


def resume_after(files: dict[str, Any] | None) -> str:
    """The cursor the next Job resumes this directory's scan after ("": a pass from the beginning)."""
    return str(((files or {}).get("scanning") or {}).get("after") or "")


def events(index: int, path: str, migrate: bool, files: dict[str, Any], previous: dict[str, Any] | None
           ) -> list[Event]:
    out: list[Event] = []
    where = f"spec.rules[{index}]"
    stale, before = int(files.get("olderLayout") or 0), int((previous or {}).get("olderLayout") or 0)
    if files.get("migrated"):
        # Mid-pass the count is the last complete pass's, not what is left: not worth quoting.
        left = "the scan goes on" if files.get("scanning") else f"{stale} left"
        out.append(Event("Normal", "FilesMigrated", f"{path}: {files['migrated']} existing files re-laid out to the "
                         f"current layout ({left})"))
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
