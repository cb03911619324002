"""Existing files after a hint change (pure): the part of the hint script that scans directories for
files whose layout is not the current one and re-lays them out, and the reading of what it reports.

Directory hints (``user.pvfs2.num_dfiles``, ``dist_name``, ``dist_params``) reach only files created
after they are set. The hint script (`pfslayout.orangefs.dirhints.script`) sets every directory's
hints first and then runs ``pfs-relayout`` (``shim/tools/relayout``, a libpvfs2 tool in the OrangeFS
image: the client tools have no rename) once for the directories to scan and once for those to
migrate, so each copy is created under the new hints. Report lines, tab-separated:

    PFSLAYOUT-STALE           <dir> <file> <datafiles> <dist name> <strip size or ->
    PFSLAYOUT-STALE-COUNT     <dir> <stale files> <files scanned>
    PFSLAYOUT-STALE-PAGE      <dir> <stale files> <files scanned> <cursor>
    PFSLAYOUT-MIGRATED        <dir> <file> <old datafiles> <new datafiles>
    PFSLAYOUT-MIGRATE-FAILED  <dir> <file> <reason>

(a tab, newline or backslash in a name is written ``\\t``, ``\\n``, ``\\\\``). The scan is recursive
over regular files; names starting with ``.pfslayout-`` (our probe, check and temporary files) and
subdirectories named ``.replica-*`` (entries of their own) are skipped. At most ``max_list`` STALE
lines per directory; the count line has the total. A migration copies a stale file into
``.pfslayout-migrate-<name>`` beside it, verifies size, checksum, the unchanged original and the copy's
layout, keeps owner, mode and times, and renames the copy over the original (``PVFS_sys_rename``
replaces the entry); a failure removes the copy and leaves the original. At most ``max_migrate`` copies
per Job; the files left, failed or refused (a non-root run cannot keep another owner) are reported
STALE, so the next run continues.

Pages: a Job has a deadline and a directory may hold more files than one Job can compare, so each call
compares at most ``max_files`` files (shared by its directories). A directory whose walk the budget
stops prints a PAGE line instead of its count line: that page's counts and the cursor, the path (relative
to the directory) of the last file compared. The next Job passes it back (``--resume DIR CURSOR``) and the
walk, depth-first in strcmp order per directory, skips everything up to it; a pass is the pages up to the
one that ends with a count line, whose counts are that page's only (the caller sums a pass:
``kinds/layoutpolicy/existing.py``). A directory the call did not reach, the budget spent, gets a PAGE
line with no files and the cursor it was given (empty: from its beginning).

The stale rule: a file is stale when its datafile count, distribution name or distribution parameters
(strip_size, varstrip's strips) differ from those of a probe file created in the file's OWN directory at
scan time (subdirectories copy their parent's hints when created and keep them, so they may differ; a
migrated copy is created in the file's own directory as well). OrangeFS stuffs a new file into one
datafile until it outgrows its first strip: getattr, ``system.pvfs2.dh`` and ``pvfs2-viewdist`` say 1
whatever ``num_dfiles`` asked for. Measured on 2.10 servers: the server keeps the requested count of a
stuffed file in ``system.pvfs2.nd`` and drops the key when it unstuffs the file, which then has exactly
that count (capped at the server count, as the client caps it at create). So a stuffed file counts with
``nd``: a small file created under the current hints is not stale, one created under other hints is,
and a file written under a 1-datafile hint (never stuffed) is stale under a 4-datafile one however
small. Which servers hold the datafiles is not compared (ROUND_ROBIN starts each file on a random one).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

TOOL = "pfs-relayout"
STALE_MARK = "PFSLAYOUT-STALE"
COUNT_MARK = "PFSLAYOUT-STALE-COUNT"
MIGRATED_MARK = "PFSLAYOUT-MIGRATED"
FAILED_MARK = "PFSLAYOUT-MIGRATE-FAILED"
INCOMPLETE_MARK = "PFSLAYOUT-RELAYOUT-INCOMPLETE"  # pfs-relayout could not read everything
TEMP_PREFIX = ".pfslayout-migrate-"
PAGE_MARK = "PFSLAYOUT-STALE-PAGE"
DEFAULT_MAX_LIST = 100
DEFAULT_MAX_MIGRATE = 50
# Files one Job compares: its page. operator/bench/relayout_pages.py, 100,000 files in one directory on 4
# loopback servers: 1,200-1,300 files/s, a page of 20,000 took 16.5 s at most (median 15.8 s), 1/18 of
# the hint Job's 300 s deadline, so a cluster may be many times slower than loopback (a network round
# trip per lookup, getattr and layout read) and still stay under a fifth of it. The unbounded scan of
# the same directory took 84 s: 300,000 files would have missed the deadline on loopback already.
DEFAULT_MAX_FILES = 20_000


@dataclass(frozen=True)
class StaleFile:
    path: str
    datafiles: int  # what the file has, or, stuffed, what it gets once it grows
    dist_name: str
    strip_size: int | None  # simple_stripe's strip; None for other distributions


@dataclass
class StaleReport:
    count: int  # stale files under the directory (after this run's migrations)
    scanned: int  # regular files compared
    files: list[StaleFile] = field(default_factory=list)  # the first max_list of them


@dataclass(frozen=True)
class Page:
    """A directory's scan stopped by the file budget: this page's counts and where the next one starts."""

    stale: int  # stale files among those this page compared
    scanned: int  # files this page compared
    after: str  # the cursor: the last file compared, relative to the directory ("": from the beginning)
    files: tuple[StaleFile, ...] = ()  # this page's STALE lines (at most max_list)


@dataclass(frozen=True)
class Migrated:
    path: str
    ok: bool
    old_datafiles: int | None = None
    new_datafiles: int | None = None
    reason: str = ""  # why not, when not ok


def check_limits(max_list: int, max_migrate: int, max_files: int = DEFAULT_MAX_FILES) -> None:
    for name, value in (("max_list", max_list), ("max_migrate", max_migrate)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    # A page of no files would never move: the tool refuses 0 as well.
    if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
        raise ValueError(f"max_files must be a positive integer, not {max_files!r}")


def flag(index: int) -> str:
    """The shell variable that says directory `index` exists (its hints were applied)."""
    return f"relayout_{index}"


def incomplete(mode: str) -> str:
    """The shell that reports an incomplete pfs-relayout run (one line, not a failed Job)."""
    return f"printf '%s\\t%s\\n' {INCOMPLETE_MARK} {mode}"


def commands(scan: Sequence[tuple[int, str]], migrate: Sequence[tuple[int, str]], max_list: int,
             max_migrate: int, max_files: int = DEFAULT_MAX_FILES,
             resume: Mapping[str, str] | None = None) -> list[str]:
    """Shell lines, run after every directory's hints: one pfs-relayout call per mode over the
    directories (index, path) whose creation succeeded, each resumed after its cursor in `resume`
    ({path: cursor a PAGE line printed}; none or "": from the beginning). One call per mode, so the
    migration and file budgets are the Job's, not a directory's."""
    check_limits(max_list, max_migrate, max_files)
    lines = []
    budget = f"--max-files {max_files}"
    for mode, dirs, opts in (("scan", scan, f"--max-list {max_list} {budget}"),
                             ("migrate", migrate, f"--max-list {max_list} --max-migrate {max_migrate} {budget}")):
        if not dirs:
            continue
        # The positional list is the one array a POSIX shell has: it starts as "--", a directory is
        # appended after it and its --resume pair put in front, in the same line as the directory so
        # that both or neither are there. The tool takes one --resume per directory: a path named twice
        # gets it once.
        lines.append("set -- --")
        resumed: set[str] = set()
        for i, p in dirs:
            after = (resume or {}).get(p, "")
            front = f"--resume {shlex.quote(p)} {shlex.quote(after)} " if after and p not in resumed else ""
            if after:
                resumed.add(p)
            lines.append(f'if [ "${{{flag(i)}:-}}" = 1 ]; then set -- {front}"$@" {shlex.quote(p)}; fi')
        # Files that cannot be read do not fail the Job: the hints are set and verified all the same;
        # the directories without a count or page line are the ones not scanned (`unreported`).
        lines.append(f'if [ "$#" -gt 1 ]; then {TOOL} {mode} {opts} "$@" || {incomplete(mode)}; fi')
    return lines


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), text)


def _records(log: str, mark: str, fields: int) -> Iterable[list[str]]:
    for line in log.splitlines():
        parts = line.split("\t")
        if parts[0] == mark and len(parts) == fields + 1:
            yield [_unescape(p) for p in parts[1:]]


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _stale_files(log: str) -> dict[str, list[StaleFile]]:
    files: dict[str, list[StaleFile]] = {}
    for d, path, datafiles, dist, strip in _records(log, STALE_MARK, 5):
        files.setdefault(d, []).append(StaleFile(path, int(datafiles) if datafiles.isdigit() else -1, dist,
                                                 _int(strip)))
    return files


def parse_stale(log: str) -> dict[str, StaleReport]:
    """{dir: StaleReport} for every directory whose scan finished (it printed its count line): the
    counts of this run, which for a paged scan are its last page's."""
    files = _stale_files(log)
    return {d: StaleReport(int(count), int(scanned), files.get(d, []))
            for d, count, scanned in _records(log, COUNT_MARK, 3) if count.isdigit() and scanned.isdigit()}


def parse_pages(log: str) -> dict[str, Page]:
    """{dir: Page} for every directory whose scan the file budget stopped (it printed a PAGE line)."""
    files = _stale_files(log)
    return {d: Page(int(count), int(scanned), after, tuple(files.get(d, [])))
            for d, count, scanned, after in _records(log, PAGE_MARK, 4) if count.isdigit() and scanned.isdigit()}


def parse_migrated(log: str) -> dict[str, list[Migrated]]:
    """{dir: [Migrated]} in the order the script reported them, successes and failures alike."""
    out: dict[str, list[Migrated]] = {}
    for line in log.splitlines():
        mark = line.split("\t", 1)[0]
        if mark == MIGRATED_MARK:
            for d, path, old, new in _records(line, MIGRATED_MARK, 4):
                out.setdefault(d, []).append(Migrated(path, True, _int(old), _int(new)))
        elif mark == FAILED_MARK:
            for d, path, reason in _records(line, FAILED_MARK, 3):
                out.setdefault(d, []).append(Migrated(path, False, reason=reason))
    return out


def unreported(dirs: Iterable[str], log: str) -> list[str]:
    """The directories asked for that have neither a count nor a page line: not scanned (missing,
    unreadable, no tool)."""
    done = parse_stale(log).keys() | parse_pages(log).keys()
    return [d for d in dirs if d not in done]
