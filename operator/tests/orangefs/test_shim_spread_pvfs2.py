"""Every file where the model puts it (issue 33 item 3): file-per-process files an MPICH job creates under a
shim `spread` rule land on the servers the rule gives — file k on servers k·d … k·d + d − 1 mod n — so no
server holds more than ⌈files·d/n⌉ datafiles, with the program's paths unchanged. Checked with
`pvfs2-viewdist` on four real loopback servers for p = 3 and 6 ranks, d = 1 (1-DV) and d = 2 (2-D with
g = 2), through ROMIO's pvfs2 driver and the project's hint `romio_pvfs2_server_list`
(images/build/mpich-patches/0005-…), and the hint's bad input refused at open.

Runs when PFSLAYOUT_MPICH_PREFIX and ORANGEFS_PREFIX name the host-built trees; skipped, saying why,
otherwise."""

from __future__ import annotations

import math
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pfslayout.shimconfig import Rule, ShimConfig, Spread, render_shim_config, spread_servers
from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, free_ports, init_and_start, render, tool
from pfstestkit.romio import Mpich

SERVERS = 4
BLOCK = 300_000  # more than four 64 KiB strips: every datafile of a 2-D:2 file gets bytes

# fpp_write DIR BLOCK [SERVER_LIST]: every rank creates DIR/data.<rank> on MPI_COMM_SELF (as IOR -F does),
# writes BLOCK bytes and closes; SERVER_LIST, when given, is passed as the application's own hint.
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, rc, len;
    char path[4096], msg[MPI_MAX_ERROR_STRING];
    MPI_File fh;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long long block = atoll(argv[2]);
    if (argc > 3) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "romio_pvfs2_server_list", argv[3]);
    }
    snprintf(path, sizeof path, "%s/data.%08d", argv[1], rank);
    char *buf = malloc((size_t)block);
    memset(buf, 'a' + rank % 26, (size_t)block);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: open %s: %s\n", rank, path, msg);
        fflush(stderr);
        MPI_Finalize(); /* not MPI_Abort: its kill can beat the launcher's forwarding of this line */
        return 3;
    }
    MPI_File_write_at(fh, 0, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    free(buf);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture
def fpp_write(orangefs: OrangeFS, mpich: Mpich, tmp_path: Path) -> Path:
    return mpich.compile(orangefs, PROGRAM, tmp_path / "fpp_write")


def placement(orangefs: OrangeFS, servers: ServerGroup, ports: list[int], path: str) -> list[int]:
    """The server indices (fs.conf order = the ports' order) holding the file's datafiles, from pvfs2-viewdist."""
    done = tool(orangefs, servers, "pvfs2-viewdist", "-f", path)
    assert done.returncode == 0, done.stdout + done.stderr
    # "Datafile 0 - tcp://127.0.0.1:3334, handle: ..."
    return [ports.index(int(line.split(" - ", 1)[1].split(",", 1)[0].rsplit(":", 1)[1]))
            for line in done.stdout.splitlines() if line.startswith("Datafile ")]


def run(mpich: Mpich, orangefs: OrangeFS, servers: ServerGroup, ranks: int, *args: str,
        shim: tuple[Path, Path] | None = None) -> subprocess.CompletedProcess[str]:
    env = mpich.env(orangefs, PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"))
    pre = ["-genv", "LD_PRELOAD", str(shim[0]), "-genv", "PFSLAYOUT_SHIM_CONFIG", str(shim[1])] if shim else []
    argv = [str(mpich.prefix / "bin" / "mpiexec"), "-launcher", "fork", "-n", str(ranks), *pre, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env,
                          cwd=servers.work.path)


def test_spread_places_each_rank_file_on_the_next_servers(
        orangefs: OrangeFS, servers: ServerGroup, mpich: Mpich, shim_lib: Path, fpp_write: Path,
        tmp_path: Path) -> None:
    ports = free_ports(SERVERS)
    init_and_start(servers, render(servers, ports), ports)
    dirs = {1: f"{MOUNT}/dv", 2: f"{MOUNT}/twod"}
    for d, where in dirs.items():
        made = tool(orangefs, servers, "pvfs2-mkdir", where)
        assert made.returncode == 0, made.stdout + made.stderr
        # the hint Job's datafile count on the directory, as the operator sets it for 1-DV / 2-D:2
        hint = tool(orangefs, servers, "pvfs2-xattr", "-s", "-k", "user.pvfs2.num_dfiles", "-v", str(d), where)
        assert hint.returncode == 0, hint.stdout + hint.stderr
    config = tmp_path / "shim.json"
    config.write_text(render_shim_config(ShimConfig(servers=SERVERS, rules=[
        Rule(path=f"pvfs2:{where}", spread=Spread(datafiles=d)) for d, where in dirs.items()])))
    for p in (3, 6):
        for d, where in dirs.items():
            target = f"{where}/p{p}"
            assert tool(orangefs, servers, "pvfs2-mkdir", target).returncode == 0
            done = run(mpich, orangefs, servers, p, str(fpp_write), f"pvfs2:{target}", str(BLOCK),
                       shim=(shim_lib, config))
            assert done.returncode == 0, done.stdout + done.stderr
            got = [placement(orangefs, servers, ports, f"{target}/data.{r:08d}") for r in range(p)]
            # file k = rank (one create per process): servers k·d … k·d + d − 1 mod n, each file's own
            assert got == [spread_servers(r, d, SERVERS) for r in range(p)], (p, d, got)
            load = Counter(s for files in got for s in files)
            assert max(load.values()) <= math.ceil(p * d / SERVERS), (p, d, load)
            print(f"p={p} d={d}: datafiles per server {dict(sorted(load.items()))}, files {got}")


def test_the_romio_hint_alone_and_its_bad_input(
        orangefs: OrangeFS, servers: ServerGroup, mpich: Mpich, fpp_write: Path) -> None:
    """The patched ROMIO without the shim: the application's own hint places the file; a malformed list
    fails the open with one line naming the hint."""
    ports = free_ports(SERVERS)
    init_and_start(servers, render(servers, ports), ports)
    for name in ("good", "bad-0", "bad-1", "bad-2"):
        assert tool(orangefs, servers, "pvfs2-mkdir", f"{MOUNT}/{name}").returncode == 0
    done = run(mpich, orangefs, servers, 1, str(fpp_write), f"pvfs2:{MOUNT}/good", str(BLOCK), "2,7")
    assert done.returncode == 0, done.stdout + done.stderr
    assert placement(orangefs, servers, ports, f"{MOUNT}/good/data.00000000") == [2, 3]  # 7 mod 4 = 3
    for i, bad in enumerate(("x", "1,1", "0,1,2,3,4")):
        done = run(mpich, orangefs, servers, 1, str(fpp_write), f"pvfs2:{MOUNT}/bad-{i}", str(BLOCK), bad)
        assert done.returncode != 0, (bad, done.stdout)
        assert "romio_pvfs2_server_list:" in done.stderr and "rank 0: open" in done.stderr, (bad, done)
        listing = tool(orangefs, servers, "pvfs2-ls", f"{MOUNT}/bad-{i}")
        assert "data." not in listing.stdout, (bad, listing.stdout)  # refused before anything was created
