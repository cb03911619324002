"""Directory layout hints on OrangeFS through its client tools (pure): the shell script a hint Job runs
and the reading of what it reports.

The one hint path of the operator: calibration creates its probe directories with it, and layout
policies apply their rules with it. The script creates each directory (`pvfs2-mkdir -p`), reads every
hint first and sets only those that differ (idempotent: a second run rewrites nothing), then reads each
back with `pvfs2-xattr -t` and prints one tab-separated report line per hint:

    PFSLAYOUT-HINT <dir> <key> <value read back> <kept|set>

`verify` compares those lines with what was asked. The script needs only `pvfs2-mkdir`, `pvfs2-xattr`,
`sed` and a POSIX shell, `PVFS2TAB_FILE` and a writable `/tmp` (libpvfs2 writes its fetched
configuration there) — no mount, no kernel module (FUSE cannot set hints).

Hints reach new files only. A directory with `scan` is then searched for existing files whose layout
is not what a file created there now gets, and one with `migrate` has them re-laid out; both run after
every directory's hints are set, through `pfs-relayout` from the OrangeFS image (the stale rule, the
report lines and their parsers: `pfslayout.orangefs.relayout`). Without either flag the script is what
it always was.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pfslayout.orangefs import relayout

MARK = "PFSLAYOUT-HINT"
DIST_MARK = "PFSLAYOUT-DIST"
CHECK_PREFIX = ".pfslayout-check-"  # the probe files `check` creates (hidden, named by the hints they test)

_PRELUDE = r"""set -u
fail=0
read_hint() {
  pvfs2-xattr -t -k "$2" "$1" 2>/dev/null | sed -n 's/.*Value : "\(.*\)"$/\1/p' | head -n 1
}
hint() {
  before=$(read_hint "$1" "$2")
  action=kept
  if [ "$before" != "$3" ]; then
    action=set
    if ! pvfs2-xattr -s -k "$2" -v "$3" "$1"; then
      echo "pfslayout-hints: $1: cannot set $2" >&2
      fail=1
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' MARK "$1" "$2" "$(read_hint "$1" "$2")" "$action"
}
check_file() {
  # A file created under the hints shows what new files really get (a read-back of the keys alone
  # cannot tell whether the server honours them).
  # OrangeFS stuffs a small file into one datafile until it outgrows the first strip, so the probe
  # file gets one byte more than a strip.
  f="$1/$2"
  if ! pvfs2-stat "$f" >/dev/null 2>&1; then
    head -c "$3" /dev/zero > /tmp/pfslayout-check
    pvfs2-cp /tmp/pfslayout-check "$f" >/dev/null 2>&1 || echo "pfslayout-hints: $f: cannot create" >&2
  fi
  n=$(pvfs2-viewdist -f "$f" 2>/dev/null | sed -n 's/^Number of datafiles\/servers = \([0-9]*\).*/\1/p')
  printf '%s\t%s\t%s\n' DISTMARK "$1" "${n:-unknown}"
}
mkdir_p() {
  # A pod's first lookups can fail while its DNS and routes settle: retry before giving up.
  tries=0
  until pvfs2-mkdir -p "$1" >/dev/null 2>/tmp/pfslayout-mkdir.err || pvfs2-stat "$1" >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -ge "${PFSLAYOUT_HINT_TRIES:-20}" ]; then
      why=$(tail -n 1 /tmp/pfslayout-mkdir.err)
      echo "pfslayout-hints: $1: cannot create the directory (pvfs2-mkdir -p failed: $why)" >&2
      fail=1
      return 1
    fi
    sleep 1
  done
}
""".replace("DISTMARK", DIST_MARK).replace("MARK", MARK)


@dataclass(frozen=True)
class DirectoryHints:
    path: str  # as clients see it below the pvfs2tab mount point
    xattrs: Mapping[str, str]
    check: bool = False  # also create a probe file under the hints and report its datafile count
    scan: bool = False  # then list existing files whose layout is not the current one
    migrate: bool = False  # then re-lay them out (implies scan)
    # Where this directory's scan resumes: the cursor its last PAGE line printed ("": from the beginning).
    # Where a pass stands, not which hints are wanted: hintjob.hints_digest leaves it out.
    resume_after: str = ""

    def check_size(self) -> int:
        """One byte past the largest strip the hints name (64 KiB, OrangeFS's default, when none)."""
        params = self.xattrs.get("user.pvfs2.dist_params", "")
        sizes = [int(x) for x in re.findall(r"(\d+)(?=;|$)", params.split(":", 1)[-1])] if params else []
        return max([65536, *sizes]) + 1

    def check_name(self) -> str:
        return CHECK_PREFIX + hashlib.sha256(repr(sorted(self.xattrs.items())).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Reported:
    value: str
    action: str  # "kept" (already right) or "set"


def script(dirs: Iterable[DirectoryHints], max_list: int = relayout.DEFAULT_MAX_LIST,
           max_migrate: int = relayout.DEFAULT_MAX_MIGRATE, max_files: int = relayout.DEFAULT_MAX_FILES) -> str:
    """The POSIX shell script that creates `dirs` and sets their hints, then scans (at most `max_list`
    stale files listed per directory, `max_files` files compared in all, each directory resumed after
    its `resume_after`) and migrates (at most `max_migrate` files in all) those that ask for it; exits 1
    if anything failed."""
    relayout.check_limits(max_list, max_migrate, max_files)
    lines = [_PRELUDE]
    scan: list[tuple[int, str]] = []
    migrate: list[tuple[int, str]] = []
    resume: dict[str, str] = {}
    for i, d in enumerate(dirs):
        q = shlex.quote(d.path)
        calls = [f"hint {q} {shlex.quote(k)} {shlex.quote(v)}" for k, v in sorted(d.xattrs.items())]
        if d.check:
            calls.append(f"check_file {q} {shlex.quote(d.check_name())} {d.check_size()}")
        if d.scan or d.migrate:
            # Remembered, not run here: every directory's hints come first, then one call per mode.
            calls.append(f"{relayout.flag(i)}=1")
            (migrate if d.migrate else scan).append((i, d.path))
            if d.resume_after:
                resume.setdefault(d.path, d.resume_after)
        lines.append(f"if mkdir_p {q}; then " + ("; ".join(calls) or ":") + "; fi")
    lines += relayout.commands(scan, migrate, max_list, max_migrate, max_files, resume)
    lines.append('exit "$fail"')
    return "\n".join(lines) + "\n"


def parse_report(log: str) -> dict[str, dict[str, Reported]]:
    """{dir: {key: Reported}} from the script's output (other lines are ignored)."""
    out: dict[str, dict[str, Reported]] = {}
    for line in log.splitlines():
        parts = line.split("\t")
        if len(parts) == 5 and parts[0] == MARK:
            out.setdefault(parts[1], {})[parts[2]] = Reported(parts[3], parts[4])
    return out


def parse_datafiles(log: str) -> dict[str, int | None]:
    """{dir: datafiles of its probe file} for the directories checked with a file."""
    out: dict[str, int | None] = {}
    for line in log.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == DIST_MARK:
            out[parts[1]] = int(parts[2]) if parts[2].isdigit() else None
    return out


def expected_datafiles(xattrs: Mapping[str, str]) -> int | None:
    num = xattrs.get("user.pvfs2.num_dfiles", "")
    return int(num) if num.isdigit() else None


def verify(dirs: Iterable[DirectoryHints], report: Mapping[str, Mapping[str, Reported]]) -> list[str]:
    """What the file system does not hold as asked, one line each; empty when every hint reads back."""
    problems = []
    for d in dirs:
        if not d.xattrs:
            continue  # only created: a failed pvfs2-mkdir fails the whole Job (exit 1)
        got = report.get(d.path)
        if got is None:
            problems.append(f"{d.path}: not reported (the directory could not be created?)")
            continue
        for key, want in sorted(d.xattrs.items()):
            seen = got.get(key)
            if seen is None:
                problems.append(f"{d.path}: {key} not reported")
            elif seen.value != want:
                problems.append(f"{d.path}: {key} reads back {seen.value!r}, expected {want!r}")
    return problems


def verify_datafiles(dirs: Iterable[DirectoryHints], log: str) -> list[str]:
    """Checked directories whose probe file did not get the datafile count the hints ask for."""
    got = parse_datafiles(log)
    problems = []
    for d in dirs:
        want = expected_datafiles(d.xattrs)
        if not d.check or want is None:
            continue
        if got.get(d.path) != want:
            problems.append(f"{d.path}: a new file gets {got.get(d.path)} datafiles, the hints ask for {want}")
    return problems


def changed(report: Mapping[str, Mapping[str, Reported]]) -> int:
    """How many hints the run had to write (0 when everything already matched)."""
    return sum(1 for keys in report.values() for r in keys.values() if r.action == "set")
