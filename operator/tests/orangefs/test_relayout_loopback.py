"""The hint script's scan and migrate steps (`pfslayout.orangefs.relayout`, `shim/tools/relayout`) against
real `pvfs2-server`s on loopback: files written under old hints are reported stale once the hints
change, files created afterwards are not (small stuffed ones included), a migration gives them the new
layout with the same bytes, owner-visible attributes and no temporaries left, within its budget, and is
idempotent; a copy that cannot be made leaves the original as it was.

pfs-relayout is built here from shim/tools/relayout against ORANGEFS_PREFIX (cmake, once per module),
into a directory the unprivileged server user can reach."""

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
from pfslayout.orangefs.relayout import TEMP_PREFIX, Migrated, parse_migrated, parse_stale
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
                      "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], ["cmake", "--build", str(build)]):
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
