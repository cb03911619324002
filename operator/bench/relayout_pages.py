"""How long one page of the stale-file scan takes: what `relayout.DEFAULT_MAX_FILES` is chosen from (not a
test; prints figures and ratios).

    ORANGEFS_PREFIX=... PYTHONPATH=operator/src:e2e/testkit python operator/bench/relayout_pages.py \
        [--files 100000] [--max-files N] [--servers 4]

Starts pvfs2-servers on loopback (pfstestkit.ofs_loopback, as the OrangeFS tests do), builds pfs-relayout
and its test file maker from shim/tools/relayout, fills one directory with `--files` empty files (the
first half under a 1-datafile hint, the rest under the 4-datafile one the scan compares with, so half are
stale), then scans it twice: once unbounded, and once in pages of `--max-files` files, each page a fresh
process resumed after the cursor the previous one printed, as successive hint Jobs are. Prints the files,
the pages, the seconds per page (longest and median), the longest page against the hint Job's deadline
(`activeDeadlineSeconds` 300) and the unbounded scan's seconds.

Loopback is the fast case (no network between client and servers): a cluster's page takes longer, so
the default keeps the longest page well under a fifth of the deadline here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pfslayout.orangefs import relayout
from pfslayout.orangefs.dirhints import DirectoryHints, script
from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, running_servers, tool

SOURCE = Path(__file__).resolve().parents[2] / "shim" / "tools" / "relayout"
DEADLINE_S = 300  # the hint Job's activeDeadlineSeconds
OLD = {"user.pvfs2.num_dfiles": "1", "user.pvfs2.dist_name": "simple_stripe",
       "user.pvfs2.dist_params": "strip_size:65536"}
NEW = {**OLD, "user.pvfs2.num_dfiles": "4"}


def build(prefix: Path, out: Path) -> Path:
    """pfs-relayout and relayout-mkfiles, as the OrangeFS image builds the tool."""
    b = out / "build"
    for argv in (["cmake", "-S", str(SOURCE), "-B", str(b), f"-DORANGEFS_PREFIX={prefix}",
                  "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                 ["cmake", "--build", str(b), "--target", "pfs-relayout", "relayout-mkfiles"]):
        subprocess.run(argv, check=True, capture_output=True, timeout=600)
    return b


def env(ofs: OrangeFS, group: ServerGroup, tools: Path) -> dict[str, str]:
    return ofs.env(PVFS2TAB_FILE=str(group.work.path / "pvfs2tab"),
                   PATH=f"{tools}:{ofs.prefix}/bin:{os.environ['PATH']}")


def make_files(ofs: OrangeFS, group: ServerGroup, tools: Path, d: str, first: int, count: int, makers: int) -> None:
    """`count` files from number `first`, made by `makers` processes over disjoint ranges."""
    step = -(-count // makers)
    procs = [subprocess.Popen([str(tools / "relayout-mkfiles"), d, str(start), str(min(step, first + count - start))],
                              env=env(ofs, group, tools))
             for start in range(first, first + count, step)]
    if any(p.wait() != 0 for p in procs):
        sys.exit("relayout-mkfiles failed")


def set_hints(ofs: OrangeFS, group: ServerGroup, tools: Path, d: str, hints: dict[str, str]) -> None:
    subprocess.run(["sh", "-c", script([DirectoryHints(d, hints)])], check=True, capture_output=True,
                   env=env(ofs, group, tools), timeout=120)


def scan(ofs: OrangeFS, group: ServerGroup, tools: Path, d: str, *opts: str) -> tuple[float, str]:
    start = time.monotonic()
    run = subprocess.run([str(tools / "pfs-relayout"), "scan", *opts, "--", d], capture_output=True, text=True,
                         env=env(ofs, group, tools), timeout=3600, check=False)
    took = time.monotonic() - start
    if run.returncode != 0:
        sys.exit(f"pfs-relayout failed ({run.returncode}): {run.stderr[-2000:]}")
    return took, run.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--max-files", type=int, default=relayout.DEFAULT_MAX_FILES)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--makers", type=int, default=8, help="processes creating the files")
    args = ap.parse_args()
    prefix = os.environ.get("ORANGEFS_PREFIX")
    if not prefix or not (Path(prefix) / "sbin" / "pvfs2-server").exists():
        sys.exit("ORANGEFS_PREFIX must name an OrangeFS install (with sbin/pvfs2-server)")
    ofs = OrangeFS(Path(prefix))
    out = Path(tempfile.mkdtemp(prefix="pfslayout-relayout-bench-"))
    try:
        tools = build(ofs.prefix, out)
        with running_servers(ofs, args.servers) as group:
            d = f"{MOUNT}/many"
            made = time.monotonic()
            set_hints(ofs, group, tools, d, OLD)
            make_files(ofs, group, tools, d, 0, args.files // 2, args.makers)
            set_hints(ofs, group, tools, d, NEW)
            make_files(ofs, group, tools, d, args.files // 2, args.files - args.files // 2, args.makers)
            print(f"files: {args.files} in {d} ({args.servers} servers on loopback, made in "
                  f"{time.monotonic() - made:.1f} s)")
            assert tool(ofs, group, "pvfs2-ls", d).returncode == 0

            unbounded_s, log = scan(ofs, group, tools, d)
            whole = relayout.parse_stale(log)[d]
            times: list[float] = []
            stale = scanned = 0
            after = ""
            while True:
                took, log = scan(ofs, group, tools, d, "--max-files", str(args.max_files),
                                 *(["--resume", d, after] if after else []))
                times.append(took)
                page = relayout.parse_pages(log).get(d)
                last = relayout.parse_stale(log).get(d)
                if page is None and last is None:
                    sys.exit(f"no page or count line: {log[-2000:]}")
                stale += page.stale if page else last.count if last else 0
                scanned += page.scanned if page else last.scanned if last else 0
                if page is None:
                    break
                after = page.after
            if (stale, scanned) != (whole.count, whole.scanned):
                sys.exit(f"the pages sum to {stale}/{scanned}, the unbounded scan says {whole.count}/{whole.scanned}")
            longest = max(times)
            print(f"pages: {len(times)} of at most {args.max_files} files (stale {stale}, scanned {scanned}, "
                  "as the unbounded scan)")
            print(f"seconds per page: max {longest:.2f}, median {statistics.median(times):.2f}, "
                  f"all {' '.join(f'{t:.1f}' for t in times)}")
            print(f"longest page / {DEADLINE_S} s deadline: {longest / DEADLINE_S:.3f}")
            print(f"unbounded scan: {unbounded_s:.2f} s ({unbounded_s / DEADLINE_S:.3f} of the deadline), "
                  f"pages together: {sum(times):.2f} s")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
