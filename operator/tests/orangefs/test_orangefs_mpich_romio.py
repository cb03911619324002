"""MPI-IO through ROMIO's pvfs2 driver on real pvfs2-servers: the MPICH that images/build/host.sh builds
(the same recipe and tree as the MPI image's /opt/mpich) compiles a small MPI-IO program, and 2 ranks
started by Hydra (`-launcher fork`) write and read back `pvfs2:` paths on loopback servers rendered by
the operator. The file then reads back byte-identical through libpvfs2 (`pvfs2-cp`), and
`pvfs2-viewdist` shows its datafiles: the default layout spreads it over both servers, the ROMIO hint
`striping_factor=1` (which only ad_pvfs2 turns into a datafile count) puts it on one.

Runs when PFSLAYOUT_MPICH_PREFIX names such an MPICH tree (`images/build/host.sh env` prints it) and
ORANGEFS_PREFIX an OrangeFS tree; skipped, saying why, otherwise."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, datafiles, free_ports, init_and_start, render, tool
from pfstestkit.romio import BLOCK, RANKS, Mpich, pattern


def test_romio_pvfs2_driver_writes_and_reads_on_real_servers(orangefs: OrangeFS, servers: ServerGroup,
                                                             mpich: Mpich, romio_check: Path) -> None:
    ports = free_ports(2)
    doc = render(servers, ports)
    init_and_start(servers, doc, ports)
    env = mpich.env(orangefs, PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"))
    expected = pattern(RANKS * BLOCK)

    for name, factor, want_dfiles in (("spread", None, 2), ("one", "1", 1)):
        argv = [str(mpich.prefix / "bin" / "mpiexec"), "-launcher", "fork", "-n", str(RANKS),
                str(romio_check), f"pvfs2:{MOUNT}/{name}", str(BLOCK), *([factor] if factor else [])]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env,
                                cwd=servers.work.path)
        assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
        assert f"ranks={RANKS} size={RANKS * BLOCK} fstype=PVFS2:" in result.stdout, result.stdout
        assert result.stdout.rstrip().endswith("result=ok"), result.stdout

        # What ROMIO wrote is what libpvfs2 reads, byte for byte, and the layout is the one asked for.
        back = servers.work.path / f"{name}.back"
        copy = tool(orangefs, servers, "pvfs2-cp", f"{MOUNT}/{name}", str(back))
        assert copy.returncode == 0, copy.stdout + copy.stderr
        assert back.read_bytes() == expected
        assert datafiles(orangefs, servers, f"{MOUNT}/{name}") == want_dfiles
