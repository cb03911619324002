"""The hint script's scan and migrate steps (pure): existing callers get the very script and Job name
they always did, scan/migrate directories are remembered and handed to pfs-relayout after every hint,
and the report lines parse into typed results (escaped names, bounds, malformed lines ignored)."""

from __future__ import annotations

import hashlib

import pytest

from pfslayout.kinds.orangefscluster.hintjob import hints_digest
from pfslayout.orangefs import relayout
from pfslayout.orangefs.dirhints import DirectoryHints, script
from pfslayout.orangefs.relayout import (
    Migrated,
    StaleFile,
    StaleReport,
    parse_migrated,
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
    assert lines[calls[0]] == ('if [ "$#" -gt 0 ]; then pfs-relayout scan --max-list 7 -- "$@" || '
                               f"{relayout.incomplete('scan')}; fi")
    assert lines[calls[1]] == ('if [ "$#" -gt 0 ]; then pfs-relayout migrate --max-list 7 --max-migrate 3 -- "$@" '
                               f"|| {relayout.incomplete('migrate')}; fi")
    # migrate implies scan: a directory is in one call only; the migrate call gets both migrate dirs, in order.
    migrate_args = lines[calls[0] + 1:calls[1]]
    assert migrate_args == ["set --",
                            """if [ "${relayout_2:-}" = 1 ]; then set -- "$@" '/mnt/ofs/m it'; fi""",
                            """if [ "${relayout_3:-}" = 1 ]; then set -- "$@" /mnt/ofs/m2; fi"""]
    assert [x for x in lines if "relayout_0:-" in x] == \
        ["""if [ "${relayout_0:-}" = 1 ]; then set -- "$@" /mnt/ofs/s; fi"""]


def test_scan_only_has_no_migrate_call() -> None:
    text = script([DirectoryHints("/mnt/ofs/s", {}, scan=True)])
    assert "pfs-relayout scan --max-list 100 --" in text and "pfs-relayout migrate" not in text
    assert "if mkdir_p /mnt/ofs/s; then relayout_0=1; fi" in text.splitlines()


@pytest.mark.parametrize("kw", [{"max_list": -1}, {"max_migrate": -2}, {"max_list": 1.5}, {"max_migrate": True}])
def test_limits_must_be_non_negative_integers(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        script([DirectoryHints("/mnt/ofs/s", {}, scan=True)], **kw)  # type: ignore[arg-type]


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
    "pfs-relayout: /mnt/ofs/x: cannot resolve the directory: No such file or directory (-1073741826)",
])


def test_parse_stale() -> None:
    assert parse_stale(LOG) == {
        "/mnt/ofs/d": StaleReport(5, 12, [StaleFile("/mnt/ofs/d/tab\there", 1, "simple_stripe", 65536),
                                          StaleFile("/mnt/ofs/d/line\nbreak\\x", 2, "varstrip_dist", None)]),
        "/mnt/ofs/e": StaleReport(0, 3, []),
    }
    # A directory without its count line did not finish its scan: it is not reported as scanned.
    assert unreported(["/mnt/ofs/d", "/mnt/ofs/gone", "/mnt/ofs/x"], LOG) == ["/mnt/ofs/gone", "/mnt/ofs/x"]


def test_parse_migrated() -> None:
    assert parse_migrated(LOG) == {"/mnt/ofs/d": [
        Migrated("/mnt/ofs/d/a", True, 1, 4),
        Migrated("/mnt/ofs/d/tab\there", False, reason="read: Permission denied (-1073741882)"),
    ]}
    assert parse_migrated("") == {} and parse_stale("") == {}
