"""The hint script's scan and migrate steps (`pfslayout.orangefs.relayout`, `shim/tools/relayout`) against
real `pvfs2-server`s on loopback: files written under old hints are reported stale once the hints
change, files created afterwards are not (small stuffed ones included), a migration gives them the new
layout with the same bytes, owner-visible attributes and no temporaries left, within its budget, and is
idempotent; a copy that cannot be made leaves the original as it was; a scan in bounded pages, each
resumed after the previous one's cursor, adds up to the scan in one run.

pfs-relayout is built here from shim/tools/relayout against ORANGEFS_PREFIX (cmake, once per module),
into a directory the unprivileged server user can reach, with its test programs (the cursor order's
unit test, a maker of many files)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfslayout.orangefs.dirhints import DirectoryHints, parse_report, script, verify
from pfslayout.orangefs.relayout import (
    INCOMPLETE_MARK,
    PAGE_MARK,
    TEMP_PREFIX,
    Migrated,
    parse_migrated,
    parse_pages,
    parse_stale,
)
from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, datafiles, free_ports, init_and_start, render, tool

SOURCE = Path(__file__).resolve().parents[3] / "shim" / "tools" / "relayout"
OLD = {"user.pvfs2.num_dfiles": "1", "user.pvfs2.dist_name": "simple_stripe",
       "user.pvfs2.dist_params": "strip_size:65536"}
NEW = {**OLD, "user.pvfs2.num_dfiles": "4"}
BIG = 300_000  # past the first 64 KiB strip: never stuffed
SMALL = 100  # within it: stuffed when more than one datafile is asked for


@pytest.fixture(scope="module")
def relayout_bin(orangefs: OrangeFS) -> Iterator[Path]:
    if not (shutil.which("cmake") and shutil.which("cc")):
        pytest.skip("cmake and a C compiler are needed to build pfs-relayout")
    out = Path(tempfile.mkdtemp(prefix="pfslayout-relayout-"))
    try:
        build = out / "build"
        for argv in (["cmake", "-S", str(SOURCE), "-B", str(build), f"-DORANGEFS_PREFIX={orangefs.prefix}",
                      "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                     ["cmake", "--build", str(build), "--target", "pfs-relayout", "relayout-mkfiles",
                      "relayout-test-cursor"]):
            result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
            assert result.returncode == 0, result.stdout + result.stderr
        for p in (out, build):
            p.chmod(0o755)  # the non-root run below must reach it
        yield build
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_script(orangefs: OrangeFS, servers: ServerGroup, tooldir: Path, dirs: list[DirectoryHints],
               as_user: int | None = None, **limits: int) -> subprocess.CompletedProcess[str]:
    env = orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"),
                       PATH=f"{tooldir}:{orangefs.prefix}/bin:{os.environ['PATH']}")
    group = None if as_user is None else pwd.getpwuid(as_user).pw_gid
    return subprocess.run(["sh", "-c", script(dirs, **limits)], capture_output=True, text=True, timeout=300,
                          env=env, check=False, user=as_user, group=group,
                          extra_groups=None if as_user is None else [], cwd=None if as_user is None else "/")


def put(orangefs: OrangeFS, servers: ServerGroup, path: str, size: int) -> bytes:
    data = os.urandom(size)
    local = servers.work.path / "upload"
    local.write_bytes(data)
    result = tool(orangefs, servers, "pvfs2-cp", str(local), path)
    assert result.returncode == 0, result.stdout + result.stderr
    return data


def get(orangefs: OrangeFS, servers: ServerGroup, path: str) -> bytes:
    local = servers.work.path / "download"
    local.unlink(missing_ok=True)
    result = tool(orangefs, servers, "pvfs2-cp", path, str(local))
    assert result.returncode == 0, result.stdout + result.stderr
    return local.read_bytes()


def listing(orangefs: OrangeFS, servers: ServerGroup, path: str) -> dict[str, str]:
    """{name: the `ls -l` line} of a directory, hidden names included."""
    result = tool(orangefs, servers, "pvfs2-ls", "-al", path)
    assert result.returncode == 0, result.stdout + result.stderr
    return {line.split()[-1]: line for line in result.stdout.splitlines() if line.strip() and "(faked)" not in line}


def inspect(orangefs: OrangeFS, servers: ServerGroup, tooldir: Path, path: str) -> list[str]:
    """pfs-relayout's view: [datafiles, stored now, stuffed|unstuffed, dist, params]."""
    result = subprocess.run([str(tooldir / "pfs-relayout"), "inspect", path], capture_output=True, text=True,
                            timeout=60, check=False,
                            env=orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab")))
    assert result.returncode == 0, result.stderr
    return result.stdout.rstrip("\n").split("\t")[2:]


def old_files(orangefs: OrangeFS, servers: ServerGroup, tooldir: Path, d: str) -> dict[str, bytes]:
    """Files written under 1-datafile hints, and what the scan must leave alone."""
    first = run_script(orangefs, servers, tooldir, [DirectoryHints(d, OLD)])
    assert first.returncode == 0, first.stdout + first.stderr
    data = {name: put(orangefs, servers, f"{d}/{name}", size)
            for name, size in (("big1", BIG), ("small1", SMALL), ("big3", BIG))}
    # A subdirectory copies its parent's hints when created and keeps them: its files are judged by them.
    assert tool(orangefs, servers, "pvfs2-mkdir", f"{d}/sub").returncode == 0
    put(orangefs, servers, f"{d}/sub/big", BIG)
    # Replicas are entries of their own; our own probe/check names are never user data.
    assert tool(orangefs, servers, "pvfs2-mkdir", f"{d}/.replica-0").returncode == 0
    put(orangefs, servers, f"{d}/.replica-0/big", BIG)
    put(orangefs, servers, f"{d}/.pfslayout-check-x", BIG)
    assert datafiles(orangefs, servers, f"{d}/big1") == 1 and datafiles(orangefs, servers, f"{d}/small1") == 1
    return data


def start(servers: ServerGroup, n: int = 4) -> None:
    ports = free_ports(n)
    init_and_start(servers, render(servers, ports), ports)


def test_scan_lists_files_written_under_other_hints(orangefs: OrangeFS, servers: ServerGroup,
                                                     relayout_bin: Path) -> None:
    start(servers)
    d = f"{MOUNT}/data"
    old_files(orangefs, servers, relayout_bin, d)
    scan = [DirectoryHints(d, NEW, scan=True)]
    result = run_script(orangefs, servers, relayout_bin, scan)
    assert result.returncode == 0, result.stdout + result.stderr
    assert verify(scan, parse_report(result.stdout)) == []  # the hints were set first
    report = parse_stale(result.stdout)[d]
    assert {f.path for f in report.files} == {f"{d}/big1", f"{d}/small1", f"{d}/big3"}
    assert {(f.datafiles, f.dist_name, f.strip_size) for f in report.files} == {(1, "simple_stripe", 65536)}
    assert (report.count, report.scanned) == (3, 4)  # + sub/big, current under its own hints

    # Created under the new hints: not stale. The small one is stuffed (one datafile, as pvfs2-viewdist
    # says) but asked for four, which is what every new small file there gets.
    put(orangefs, servers, f"{d}/big2", BIG)
    put(orangefs, servers, f"{d}/small2", SMALL)
    assert datafiles(orangefs, servers, f"{d}/big2") == 4 and datafiles(orangefs, servers, f"{d}/small2") == 1
    assert inspect(orangefs, servers, relayout_bin, f"{d}/small2") == ["4", "1", "stuffed", "simple_stripe",
                                                                        "strip_size:65536"]
    again = run_script(orangefs, servers, relayout_bin, scan, max_list=1)
    report = parse_stale(again.stdout)[d]
    assert (report.count, report.scanned, len(report.files)) == (3, 6, 1), again.stdout
    assert report.files[0].path == f"{d}/big1"  # name order: a bounded list starts at the same files
    assert parse_migrated(again.stdout) == {}
    assert not [n for n in listing(orangefs, servers, d) if n.startswith(".pfslayout-probe")]


def test_migrate_relays_out_within_its_budget_and_is_idempotent(orangefs: OrangeFS, servers: ServerGroup,
                                                                relayout_bin: Path) -> None:
    start(servers)
    d = f"{MOUNT}/data"
    data = old_files(orangefs, servers, relayout_bin, d)
    assert tool(orangefs, servers, "pvfs2-chmod", "640", f"{d}/big1").returncode == 0
    before = listing(orangefs, servers, d)
    migrate = [DirectoryHints(d, NEW, migrate=True)]

    first = run_script(orangefs, servers, relayout_bin, migrate, max_migrate=2)
    assert first.returncode == 0, first.stdout + first.stderr
    assert parse_migrated(first.stdout) == {d: [Migrated(f"{d}/big1", True, 1, 4), Migrated(f"{d}/big3", True, 1, 4)]}
    report = parse_stale(first.stdout)[d]
    assert (report.count, [f.path for f in report.files]) == (1, [f"{d}/small1"])  # the next run's

    second = run_script(orangefs, servers, relayout_bin, migrate)
    assert parse_migrated(second.stdout) == {d: [Migrated(f"{d}/small1", True, 1, 4)]}, second.stdout
    assert parse_stale(second.stdout)[d].count == 0

    for name in ("big1", "big3"):
        assert datafiles(orangefs, servers, f"{d}/{name}") == 4
    # The small copy is stuffed and grows onto four servers: what a new small file there gets.
    assert inspect(orangefs, servers, relayout_bin, f"{d}/small1")[:3] == ["4", "1", "stuffed"]
    for name, content in data.items():
        assert get(orangefs, servers, f"{d}/{name}") == content, name
    after = listing(orangefs, servers, d)
    assert not [n for n in after if n.startswith(TEMP_PREFIX)], after
    # Mode, owner, size and times are the original's (the ls line shows all four).
    assert after["big1"] == before["big1"] and after["big1"].startswith(" -rw-r-----")
    # What it must not touch: the subdirectory under its own hints, the replica, our check file.
    assert datafiles(orangefs, servers, f"{d}/sub/big") == 1
    assert datafiles(orangefs, servers, f"{d}/.replica-0/big") == 1
    assert datafiles(orangefs, servers, f"{d}/.pfslayout-check-x") == 1

    third = run_script(orangefs, servers, relayout_bin, migrate)
    assert third.returncode == 0 and parse_migrated(third.stdout) == {}
    assert (parse_stale(third.stdout)[d].count, parse_stale(third.stdout)[d].scanned) == (0, 4)


def test_a_copy_that_cannot_be_made_leaves_the_original(orangefs: OrangeFS, servers: ServerGroup,
                                                        relayout_bin: Path) -> None:
    """Run as an unprivileged user (the Job is non-root): its own write-only file cannot be read, so the
    copy fails; root's file it refuses up front (it could not give the copy back to root); its own
    readable file migrates."""
    start(servers)
    d = f"{MOUNT}/shared"
    user = servers.work.uid if servers.work.uid is not None else os.geteuid()
    if user == 0 or os.geteuid() != 0:
        pytest.skip("needs root to run the script as another user")
    owner = [pwd.getpwuid(user).pw_name, grp.getgrgid(pwd.getpwuid(user).pw_gid).gr_name]
    first = run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, OLD)])
    assert first.returncode == 0, first.stderr
    data = {name: put(orangefs, servers, f"{d}/{name}", BIG) for name in ("mine", "unreadable", "roots")}
    for path in (d, f"{d}/mine", f"{d}/unreadable"):
        assert tool(orangefs, servers, "pvfs2-chown", *owner, path).returncode == 0
    assert tool(orangefs, servers, "pvfs2-chmod", "200", f"{d}/unreadable").returncode == 0
    assert tool(orangefs, servers, "pvfs2-chmod", "600", f"{d}/roots").returncode == 0
    before = listing(orangefs, servers, d)

    result = run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, NEW, migrate=True)], as_user=user)
    assert result.returncode == 0, result.stdout + result.stderr
    by_path = {m.path: m for m in parse_migrated(result.stdout)[d]}
    assert by_path[f"{d}/mine"] == Migrated(f"{d}/mine", True, 1, 4)
    assert not by_path[f"{d}/unreadable"].ok and "read: Permission denied" in by_path[f"{d}/unreadable"].reason
    assert not by_path[f"{d}/roots"].ok and "owned by uid 0" in by_path[f"{d}/roots"].reason
    report = parse_stale(result.stdout)[d]
    assert (report.count, {f.path for f in report.files}) == (2, {f"{d}/unreadable", f"{d}/roots"})

    after = listing(orangefs, servers, d)
    assert not [n for n in after if n.startswith(TEMP_PREFIX)], after
    for name in ("unreadable", "roots"):
        assert after[name] == before[name]
        assert datafiles(orangefs, servers, f"{d}/{name}") == 1
        assert get(orangefs, servers, f"{d}/{name}") == data[name]  # as root
    assert datafiles(orangefs, servers, f"{d}/mine") == 4 and get(orangefs, servers, f"{d}/mine") == data["mine"]


def test_trace_retention_removes_only_the_runs_it_is_given(orangefs: OrangeFS, servers: ServerGroup,
                                                          relayout_bin: Path) -> None:
    """The learning loop's collector (kinds/layoutpolicy/learn.collector_script) on real OrangeFS: the
    files of the runs to prune removed by `pfs-relayout remove`, the job's traces copied, and the listing
    `pvfs2-ls -l --all-times` prints read back into runs for the next decision."""
    from pfslayout.kinds.layoutpolicy import learn

    start(servers, 2)
    d = f"{MOUNT}/runs"  # not ".../traces/": the copy's destination /traces/ is replaced below
    assert tool(orangefs, servers, "pvfs2-mkdir", d).returncode == 0
    names = ["old.rank-000000.pfstrace", "old.rank-000001.pfstrace", "old.stats.rank-000000.json",
             "older.rank-000000.pfstrace", "new.rank-000000.pfstrace", "new.stats.rank-000000.json", "notes"]
    for name in names:
        put(orangefs, servers, f"{d}/{name}", 100)
    out = servers.work.path / "copied"
    out.mkdir()
    text = learn.collector_script(d, "new", ["old", "older"]).replace("/traces/", f"{out}/")
    run = subprocess.run(["sh", "-c", text], capture_output=True, text=True, timeout=120, check=False,
                         env=orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"),
                                          PATH=f"{relayout_bin}:{orangefs.prefix}/bin:{os.environ['PATH']}"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{learn.PRUNED_MARKER} 4" in run.stdout and f"{learn.FILES_MARKER} 1" in run.stdout, run.stdout
    assert sorted(listing(orangefs, servers, d)) == [".", "new.rank-000000.pfstrace", "new.stats.rank-000000.json",
                                                     "notes"]
    assert [p.name for p in out.iterdir()] == ["new.rank-000000.pfstrace"]
    runs = learn.listing_runs(run.stdout)  # what the operator decides the next deletions from
    assert list(runs) == ["new"], run.stdout
    # a file that is not there is said, and the others still go
    gone = subprocess.run([str(relayout_bin / "pfs-relayout"), "remove", f"{d}/missing", f"{d}/notes"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env=orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab")))
    assert gone.returncode == 1 and f"{d}/missing: cannot remove" in gone.stderr, gone.stderr
    assert gone.stdout == f"PFSLAYOUT-REMOVED\t{d}/notes\n"


def test_the_resume_order_is_the_walk_order(relayout_bin: Path) -> None:
    """cursor.c's unit test (pure C, no servers): a resumed walk visits exactly the files after the cursor,
    whether or not the cursor's file still exists."""
    result = subprocess.run([str(relayout_bin / "relayout-test-cursor")], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0 and result.stdout.startswith("ok:"), result.stdout + result.stderr


def make_files(orangefs: OrangeFS, servers: ServerGroup, tooldir: Path, d: str, first: int, count: int) -> None:
    """Empty files d/f<first>... (7 digits), one libpvfs2 create each: a process per file would take minutes."""
    result = subprocess.run([str(tooldir / "relayout-mkfiles"), d, str(first), str(count)], capture_output=True,
                            text=True, timeout=300, check=False,
                            env=orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab")))
    assert result.returncode == 0, result.stderr


def walk_key(rel: str) -> tuple[str, ...]:
    """The walk's order: components compared as strcmp compares them (ASCII names here)."""
    return tuple(rel.split("/"))


def test_a_scan_in_pages_adds_up_to_the_scan_in_one_run(orangefs: OrangeFS, servers: ServerGroup,
                                                       relayout_bin: Path) -> None:
    start(servers)
    dirs = [f"{MOUNT}/pages{i}" for i in range(3)]
    for d in dirs:
        # Half of each directory's files written under the old hints (stale), half under the new ones.
        assert run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, OLD)]).returncode == 0
        make_files(orangefs, servers, relayout_bin, d, 0, 350)
        if d == dirs[0]:
            # Below the first directory, walked between its f* files and any later name.
            assert tool(orangefs, servers, "pvfs2-mkdir", f"{d}/sub").returncode == 0
            make_files(orangefs, servers, relayout_bin, f"{d}/sub", 0, 200)
        assert run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, NEW)]).returncode == 0
        make_files(orangefs, servers, relayout_bin, d, 350, 350)
    unlimited = 10**9  # every STALE line, so that the pages' lines can be compared with one run's
    whole = run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, NEW, scan=True) for d in dirs],
                       max_list=unlimited, max_files=unlimited)
    assert whole.returncode == 0 and PAGE_MARK not in whole.stdout, whole.stdout[-2000:] + whole.stderr
    one_run = parse_stale(whole.stdout)
    assert [(one_run[d].count, one_run[d].scanned) for d in dirs] == [(350, 900), (350, 700), (350, 700)]

    cursor = dict.fromkeys(dirs, "")
    totals = {d: [0, 0] for d in dirs}
    listed: dict[str, list[str]] = {d: [] for d in dirs}
    going, runs, added = list(dirs), 0, False
    while going:
        runs += 1
        assert runs <= 10, "the pages do not end"
        # As the operator will: every rule directory scanned, each resumed after its last page's cursor.
        result = run_script(orangefs, servers, relayout_bin,
                            [DirectoryHints(d, NEW, scan=True, resume_after=cursor[d]) for d in going],
                            max_list=unlimited, max_files=500)
        assert result.returncode == 0 and INCOMPLETE_MARK not in result.stdout, result.stdout[-2000:] + result.stderr
        pages, ends = parse_pages(result.stdout), parse_stale(result.stdout)
        assert sorted([*pages, *ends]) == sorted(going), result.stdout[-2000:]
        assert sum(p.scanned for p in pages.values()) + sum(e.scanned for e in ends.values()) <= 500
        for d in going:
            page, end = pages.get(d), ends.get(d)
            files = [f.path for f in (page.files if page else end.files if end else ())]
            rel = [f[len(d) + 1:] for f in files]
            # This page's stale files lie after the previous cursor and, unless the pass ended, up to its own.
            assert all(walk_key(r) > walk_key(cursor[d]) for r in rel if cursor[d]), (cursor[d], rel[:3])
            if page is not None and page.after:
                assert all(walk_key(r) <= walk_key(page.after) for r in rel)
                assert not cursor[d] or walk_key(page.after) >= walk_key(cursor[d])
            listed[d] += files
            totals[d][0] += page.stale if page else end.count if end else 0
            totals[d][1] += page.scanned if page else end.scanned if end else 0
            if page is not None:
                cursor[d] = page.after
        if not added:
            # Between pages: a file before the first directory's cursor waits for the next pass, one
            # after it is part of this one.
            assert cursor[dirs[0]] == "f0000499", cursor
            put(orangefs, servers, f"{dirs[0]}/f0000001a", SMALL)
            put(orangefs, servers, f"{dirs[0]}/zz-late", SMALL)
            added = True
        going = [d for d in going if d not in ends]
        assert (PAGE_MARK in result.stdout) == bool(going)  # every run but the last stops somewhere
    assert runs == 5  # 2300 files + the late one, 500 a run
    for d in dirs:
        assert len(listed[d]) == len(set(listed[d])), "a file compared twice"
        assert sorted(listed[d]) == sorted(f.path for f in one_run[d].files)
        late = 1 if d == dirs[0] else 0  # zz-late, after the cursor; f0000001a was passed already
        assert totals[d] == [one_run[d].count, one_run[d].scanned + late], d
    again = parse_stale(run_script(orangefs, servers, relayout_bin, [DirectoryHints(dirs[0], NEW, scan=True)],
                                   max_files=unlimited).stdout)[dirs[0]]
    assert again.scanned == one_run[dirs[0]].scanned + 2  # the next pass sees both


def test_a_migration_in_pages_moves_on(orangefs: OrangeFS, servers: ServerGroup, relayout_bin: Path) -> None:
    """migrate pages the same way: each page re-lays out what it compares (within max_migrate) and the
    pass ends with nothing stale."""
    start(servers)
    d = f"{MOUNT}/moving"
    assert run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, OLD)]).returncode == 0
    make_files(orangefs, servers, relayout_bin, d, 0, 25)
    after, moved = "", []
    for _ in range(3):
        result = run_script(orangefs, servers, relayout_bin, [DirectoryHints(d, NEW, migrate=True,
                                                                             resume_after=after)], max_files=10)
        assert result.returncode == 0, result.stdout + result.stderr
        moved += [m.path for m in parse_migrated(result.stdout).get(d, []) if m.ok]
        page = parse_pages(result.stdout).get(d)
        if page is None:
            break
        assert page.stale == 0 and page.scanned == 10
        after = page.after
    assert parse_stale(result.stdout)[d].count == 0 and page is None
    assert moved == [f"{d}/f{i:07d}" for i in range(25)]  # each once, in order
    assert not [n for n in listing(orangefs, servers, d) if n.startswith(TEMP_PREFIX)]
