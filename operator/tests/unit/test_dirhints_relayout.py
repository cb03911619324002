"""The hint script's scan and migrate steps (pure): existing callers get the very script and Job name
they always did, scan/migrate directories are remembered and handed to pfs-relayout after every hint,
each with its resume cursor whatever the names hold, and the report lines parse into typed results
(escaped names, bounds, pages, malformed lines ignored)."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfslayout.kinds.orangefscluster.hintjob import hints_digest
from pfslayout.orangefs import relayout
from pfslayout.orangefs.dirhints import DirectoryHints, script
from pfslayout.orangefs.relayout import (
    Migrated,
    Page,
    StaleFile,
    StaleReport,
    parse_migrated,
    parse_pages,
    parse_stale,
    unreported,
)
from pfslayout.planner.hints import hints_for


def existing_dirs() -> list[DirectoryHints]:
    return [DirectoryHints("/mnt/ofs/a", hints_for("1-DH", None, 4, "file-per-process", 65536).xattrs, check=True),
            DirectoryHints("/mnt/ofs/b c", {"user.pvfs2.num_dfiles": "1"}),
            DirectoryHints("/mnt/ofs/empty", {})]


def test_existing_callers_get_the_same_script_and_job_name() -> None:
    # Pinned from the script and digest before scan/migrate existed (commit d60916e).
    dirs = existing_dirs()
    assert hashlib.sha256(script(dirs).encode()).hexdigest() == \
        "ee72dac1a6fc37579acd5b2f5e35b68b8e14278f207941ad8ed60e772ddca04e"
    assert hints_digest(dirs) == "7e44653754" and hints_digest(dirs[:1]) == "59d2387585"
    assert "pfs-relayout" not in script(dirs) and "relayout_" not in script(dirs)
    # The limits do not matter when nothing scans.
    assert script(dirs, max_list=1, max_migrate=0) == script(dirs)


def test_scan_and_migrate_change_the_job_name() -> None:
    plain = DirectoryHints("/mnt/ofs/a", {"user.pvfs2.num_dfiles": "4"})
    scan = DirectoryHints("/mnt/ofs/a", {"user.pvfs2.num_dfiles": "4"}, scan=True)
    migrate = DirectoryHints("/mnt/ofs/a", {"user.pvfs2.num_dfiles": "4"}, migrate=True)
    assert len({hints_digest([plain]), hints_digest([scan]), hints_digest([migrate])}) == 3


def test_relayout_runs_after_every_hint_once_per_mode() -> None:
    dirs = [DirectoryHints("/mnt/ofs/s", {"user.pvfs2.num_dfiles": "4"}, scan=True),
            DirectoryHints("/mnt/ofs/plain", {"user.pvfs2.num_dfiles": "2"}),
            DirectoryHints("/mnt/ofs/m it", {"user.pvfs2.num_dfiles": "4"}, migrate=True),
            DirectoryHints("/mnt/ofs/m2", {"user.pvfs2.num_dfiles": "1"}, scan=True, migrate=True)]
    text = script(dirs, max_list=7, max_migrate=3)
    lines = text.splitlines()
    # A directory is handed on only when its creation succeeded: the flag is set inside its branch, after
    # its hints.
    assert "if mkdir_p /mnt/ofs/s; then hint /mnt/ofs/s user.pvfs2.num_dfiles 4; relayout_0=1; fi" in lines
    assert "if mkdir_p /mnt/ofs/plain; then hint /mnt/ofs/plain user.pvfs2.num_dfiles 2; fi" in lines
    assert "if mkdir_p '/mnt/ofs/m it'; then hint '/mnt/ofs/m it' user.pvfs2.num_dfiles 4; relayout_2=1; fi" in lines
    calls = [i for i, x in enumerate(lines) if "pfs-relayout" in x]
    last_hint = max(i for i, x in enumerate(lines) if x.startswith("if mkdir_p "))
    assert len(calls) == 2 and min(calls) > last_hint and lines[-1] == 'exit "$fail"'
    # The argument list starts as "--": one more than it means a directory to scan.
    assert lines[calls[0]] == ('if [ "$#" -gt 1 ]; then pfs-relayout scan --max-list 7 --max-files '
                               f'{relayout.DEFAULT_MAX_FILES} "$@" || {relayout.incomplete("scan")}; fi')
    assert lines[calls[1]] == ('if [ "$#" -gt 1 ]; then pfs-relayout migrate --max-list 7 --max-migrate 3 '
                               f'--max-files {relayout.DEFAULT_MAX_FILES} "$@" || {relayout.incomplete("migrate")}; fi')
    # migrate implies scan: a directory is in one call only; the migrate call gets both migrate dirs, in order.
    migrate_args = lines[calls[0] + 1:calls[1]]
    assert migrate_args == ["set -- --",
                            """if [ "${relayout_2:-}" = 1 ]; then set -- "$@" '/mnt/ofs/m it'; fi""",
                            """if [ "${relayout_3:-}" = 1 ]; then set -- "$@" /mnt/ofs/m2; fi"""]
    assert [x for x in lines if "relayout_0:-" in x] == \
        ["""if [ "${relayout_0:-}" = 1 ]; then set -- "$@" /mnt/ofs/s; fi"""]


def test_scan_only_has_no_migrate_call() -> None:
    text = script([DirectoryHints("/mnt/ofs/s", {}, scan=True)])
    assert "pfs-relayout scan --max-list 100 --max-files" in text and "pfs-relayout migrate" not in text
    assert "if mkdir_p /mnt/ofs/s; then relayout_0=1; fi" in text.splitlines()


@pytest.mark.parametrize("kw", [{"max_list": -1}, {"max_migrate": -2}, {"max_list": 1.5}, {"max_migrate": True}])
def test_limits_must_be_non_negative_integers(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        script([DirectoryHints("/mnt/ofs/s", {}, scan=True)], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_a_page_must_hold_a_file(bad: object) -> None:
    # pfs-relayout refuses --max-files 0 too: a page of nothing would never end a pass.
    with pytest.raises(ValueError, match="max_files must be a positive integer"):
        script([DirectoryHints("/mnt/ofs/s", {}, scan=True)], max_files=bad)  # type: ignore[arg-type]


def test_the_cursor_is_not_part_of_the_job_name() -> None:
    # The digest names the hints wanted; where a pass stands changes every page.
    hints = {"user.pvfs2.num_dfiles": "4"}
    first = DirectoryHints("/mnt/ofs/a", hints, scan=True)
    assert hints_digest([first]) == hints_digest([DirectoryHints("/mnt/ofs/a", hints, scan=True,
                                                                 resume_after="sub/f0000499")])


FAKE_TOOL = """#!/bin/sh
# Stands in for pfs-relayout: its arguments, one per NUL-terminated record.
printf '%s\\0' "$@"
"""


def tool_argv(tmp_path: Path, text: str) -> list[list[str]]:
    """The argument lists the script hands to pfs-relayout, one per call, run by a real POSIX shell."""
    fake = tmp_path / "pfs-relayout"
    fake.write_text(FAKE_TOOL)
    fake.chmod(0o755)
    # Only the relayout part, from its first line on: the hint lines need the client tools. The flags
    # stand for mkdir_p's success. (Split on the text, not on lines: a name may hold a line break.)
    part = text[text.index("set -- --\n"):text.rindex('exit "$fail"')]
    shell = "".join(f"{flag}=1\n" for flag in sorted(set(re.findall(r"relayout_[0-9]+(?==1;)", text)))) + part
    run = subprocess.run(["sh", "-c", shell], capture_output=True, timeout=30, check=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    out = run.stdout.decode()
    # Each call's records end where the next call starts: split on the mode word pfs-relayout gets first.
    calls: list[list[str]] = []
    for arg in out.split("\0")[:-1]:
        if arg in ("scan", "migrate") and (not calls or "--" in calls[-1]):
            calls.append([])
        calls[-1].append(arg)
    return calls


def test_resume_cursors_go_before_the_directories(tmp_path: Path) -> None:
    dirs = [DirectoryHints("/mnt/ofs/a", {}, scan=True, resume_after="sub/f7"),
            DirectoryHints("/mnt/ofs/b", {}, scan=True),
            DirectoryHints("/mnt/ofs/m", {}, migrate=True, resume_after="x")]
    calls = tool_argv(tmp_path, script(dirs, max_list=3, max_migrate=2, max_files=500))
    assert calls == [["scan", "--max-list", "3", "--max-files", "500", "--resume", "/mnt/ofs/a", "sub/f7", "--",
                      "/mnt/ofs/a", "/mnt/ofs/b"],
                     ["migrate", "--max-list", "3", "--max-migrate", "2", "--max-files", "500", "--resume",
                      "/mnt/ofs/m", "x", "--", "/mnt/ofs/m"]]


def test_a_directory_not_created_takes_its_cursor_with_it() -> None:
    text = script([DirectoryHints("/mnt/ofs/a", {}, scan=True, resume_after="f1")])
    # One line holds the directory and its --resume pair: a failed mkdir_p leaves out both.
    assert """if [ "${relayout_0:-}" = 1 ]; then set -- --resume /mnt/ofs/a f1 "$@" /mnt/ofs/a; fi""" in \
        text.splitlines()


NAMES = st.text(st.characters(codec="utf-8", exclude_characters="\0/"), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dirs=st.lists(st.tuples(NAMES, st.lists(NAMES, max_size=3).map("/".join), st.booleans()), min_size=1,
                     max_size=4, unique_by=lambda t: t[0]))
def test_any_names_and_cursors_reach_the_tool_as_they_are(tmp_path: Path,
                                                          dirs: list[tuple[str, str, bool]]) -> None:
    hints = [DirectoryHints(f"/mnt/ofs/{name}", {}, scan=not migrate, migrate=migrate, resume_after=cursor)
             for name, cursor, migrate in dirs]
    calls = tool_argv(tmp_path, script(hints, max_files=9))
    for mode, call in zip([m for m in ("scan", "migrate") if any(h.migrate == (m == "migrate") for h in hints)],
                          calls, strict=True):
        mine = [h for h in hints if h.migrate == (mode == "migrate")]
        end = call.index("--")
        assert call[end + 1:] == [h.path for h in mine]
        opts = call[:end]
        resumes = {opts[i + 1]: opts[i + 2] for i, a in enumerate(opts) if a == "--resume"}
        assert resumes == {h.path: h.resume_after for h in mine if h.resume_after}


LOG = "\n".join([
    "PFSLAYOUT-HINT\t/mnt/ofs/d\tuser.pvfs2.num_dfiles\t4\tset",
    "PFSLAYOUT-MIGRATED\t/mnt/ofs/d\t/mnt/ofs/d/a\t1\t4",
    "PFSLAYOUT-MIGRATE-FAILED\t/mnt/ofs/d\t/mnt/ofs/d/tab\\there\tread: Permission denied (-1073741882)",
    "PFSLAYOUT-STALE\t/mnt/ofs/d\t/mnt/ofs/d/tab\\there\t1\tsimple_stripe\t65536",
    "PFSLAYOUT-STALE\t/mnt/ofs/d\t/mnt/ofs/d/line\\nbreak\\\\x\t2\tvarstrip_dist\t-",
    "PFSLAYOUT-STALE-COUNT\t/mnt/ofs/d\t5\t12",
    "PFSLAYOUT-STALE-COUNT\t/mnt/ofs/e\t0\t3",
    "PFSLAYOUT-STALE\t/mnt/ofs/gone\t/mnt/ofs/gone/x\t1\tsimple_stripe\t65536",
    "PFSLAYOUT-STALE\tshort",
    "PFSLAYOUT-STALE-COUNT\t/mnt/ofs/bad\tmany\t3",
    "PFSLAYOUT-STALE\t/mnt/ofs/p\t/mnt/ofs/p/sub/f1\t1\tsimple_stripe\t65536",
    "PFSLAYOUT-STALE-PAGE\t/mnt/ofs/p\t1\t500\tsub/tab\\there",
    "PFSLAYOUT-STALE-PAGE\t/mnt/ofs/later\t0\t0\t",
    "PFSLAYOUT-STALE-PAGE\t/mnt/ofs/bad\t0\tsome\tx",
    "PFSLAYOUT-STALE-PAGE\t/mnt/ofs/short\t0\t0",
    "pfs-relayout: /mnt/ofs/x: cannot resolve the directory: No such file or directory (-1073741826)",
])


def test_parse_stale() -> None:
    assert parse_stale(LOG) == {
        "/mnt/ofs/d": StaleReport(5, 12, [StaleFile("/mnt/ofs/d/tab\there", 1, "simple_stripe", 65536),
                                          StaleFile("/mnt/ofs/d/line\nbreak\\x", 2, "varstrip_dist", None)]),
        "/mnt/ofs/e": StaleReport(0, 3, []),
    }
    # A directory without its count line did not finish its scan: it is not reported as scanned. One with
    # a page line was scanned as far as the budget went: it is reported, as a page.
    assert unreported(["/mnt/ofs/d", "/mnt/ofs/gone", "/mnt/ofs/x", "/mnt/ofs/p", "/mnt/ofs/later",
                       "/mnt/ofs/short"], LOG) == ["/mnt/ofs/gone", "/mnt/ofs/x", "/mnt/ofs/short"]


def test_parse_pages() -> None:
    assert parse_pages(LOG) == {
        "/mnt/ofs/p": Page(1, 500, "sub/tab\there", (StaleFile("/mnt/ofs/p/sub/f1", 1, "simple_stripe", 65536),)),
        # Not reached, the budget spent: no files, and an empty cursor starts it from its beginning.
        "/mnt/ofs/later": Page(0, 0, ""),
    }
    assert parse_pages("") == {} and "/mnt/ofs/p" not in parse_stale(LOG)


def test_parse_migrated() -> None:
    assert parse_migrated(LOG) == {"/mnt/ofs/d": [
        Migrated("/mnt/ofs/d/a", True, 1, 4),
        Migrated("/mnt/ofs/d/tab\there", False, reason="read: Permission denied (-1073741882)"),
    ]}
    assert parse_migrated("") == {} and parse_stale("") == {}
