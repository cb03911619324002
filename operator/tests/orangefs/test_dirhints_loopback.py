"""The operator's one hint path (`pfslayout.orangefs.dirhints`) against real `pvfs2-server`s on loopback:
the script a hint Job runs creates nested directories, sets every hint, reads each back, rewrites
nothing on a second run, repairs a hint changed by hand, and files created afterwards follow the hints
(`pvfs2-viewdist`)."""

from __future__ import annotations

import os
import subprocess

from pfslayout.orangefs.dirhints import (
    DirectoryHints,
    changed,
    parse_datafiles,
    parse_report,
    script,
    verify,
    verify_datafiles,
)
from pfslayout.planner.hints import hints_for
from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, datafiles, free_ports, init_and_start, render, tool


def run_script(orangefs: OrangeFS, servers: ServerGroup, dirs: list[DirectoryHints]
               ) -> subprocess.CompletedProcess[str]:
    env = orangefs.env(PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"),
                       PATH=f"{orangefs.prefix}/bin:{os.environ['PATH']}")
    return subprocess.run(["sh", "-c", script(dirs)], capture_output=True, text=True, timeout=120, env=env,
                          check=False)


def test_hint_script_sets_reads_back_and_is_idempotent(orangefs: OrangeFS, servers: ServerGroup) -> None:
    ports = free_ports(4)
    doc = render(servers, ports)
    init_and_start(servers, doc, ports)
    one = DirectoryHints(f"{MOUNT}/.pfslayout/calibration/x/1-DV/s65536",
                         hints_for("1-DV", None, 4, "file-per-process", 65536).xattrs)
    two = DirectoryHints(f"{MOUNT}/.pfslayout/calibration/x/2-D-g2/s65536",
                         hints_for("2-D", 2, 4, "file-per-process", 65536).xattrs)
    dirs = [one, two]

    first = run_script(orangefs, servers, dirs)
    assert first.returncode == 0, first.stdout + first.stderr
    report = parse_report(first.stdout)
    assert verify(dirs, report) == [], first.stdout
    assert changed(report) == len(one.xattrs) + len(two.xattrs)

    # Nothing differs: nothing is rewritten.
    again = run_script(orangefs, servers, dirs)
    assert again.returncode == 0, again.stderr
    assert changed(parse_report(again.stdout)) == 0 and verify(dirs, parse_report(again.stdout)) == []

    # Drift by hand is repaired, and only the drifted key is written.
    assert tool(orangefs, servers, "pvfs2-xattr", "-s", "-k", "user.pvfs2.num_dfiles", "-v", "3",
                two.path).returncode == 0
    repaired = parse_report(run_script(orangefs, servers, dirs).stdout)
    assert changed(repaired) == 1 and repaired[two.path]["user.pvfs2.num_dfiles"].action == "set"
    assert verify(dirs, repaired) == []

    # Files created afterwards follow the hints: 1 datafile under 1-DV, n/g = 2 under 2-D g=2.
    blob = servers.work.path / "blob"
    blob.write_bytes(os.urandom(512 * 1024))
    for d, want in ((one, 1), (two, 2)):
        assert tool(orangefs, servers, "pvfs2-cp", str(blob), f"{d.path}/f").returncode == 0
        assert datafiles(orangefs, servers, f"{d.path}/f") == want


def test_hint_script_reports_a_directory_it_cannot_create(orangefs: OrangeFS, servers: ServerGroup) -> None:
    ports = free_ports(2)
    doc = render(servers, ports)
    init_and_start(servers, doc, ports)
    bad = DirectoryHints("/not-the-mount/x", {"user.pvfs2.num_dfiles": "1"})
    result = run_script(orangefs, servers, [bad])
    assert result.returncode == 1
    assert "/not-the-mount/x: cannot create the directory" in result.stderr
    assert verify([bad], parse_report(result.stdout)) == ["/not-the-mount/x: not reported (the directory could "
                                                          "not be created?)"]


def test_check_file_shows_what_new_files_get(orangefs: OrangeFS, servers: ServerGroup) -> None:
    ports = free_ports(4)
    doc = render(servers, ports)
    init_and_start(servers, doc, ports)
    dirs = [DirectoryHints(f"{MOUNT}/dv", hints_for("1-DV", None, 4, "file-per-process", 65536).xattrs, check=True),
            DirectoryHints(f"{MOUNT}/dh", hints_for("1-DH", None, 4, "file-per-process", 65536).xattrs, check=True)]
    result = run_script(orangefs, servers, dirs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert parse_datafiles(result.stdout) == {f"{MOUNT}/dv": 1, f"{MOUNT}/dh": 4}, result.stdout
    assert verify_datafiles(dirs, result.stdout) == []
    # A hint changed by hand after the check file exists: the next run repairs the key and checks a new
    # file named after the hints, so the count reflects the repaired hints.
    assert tool(orangefs, servers, "pvfs2-xattr", "-s", "-k", "user.pvfs2.num_dfiles", "-v", "2",
                f"{MOUNT}/dv").returncode == 0
    again = run_script(orangefs, servers, dirs)
    assert parse_report(again.stdout)[f"{MOUNT}/dv"]["user.pvfs2.num_dfiles"].action == "set"
    assert verify_datafiles(dirs, again.stdout) == []
