"""The shim writes its per-rank traces straight onto OrangeFS: with `trace.dir` a `pvfs2:` path, every rank
of a real MPICH job (ROMIO's pvfs2 driver, loopback pvfs2-servers) writes `<job>.rank-N.pfstrace` through
MPI-IO, named by `PFSLAYOUT_SHIM_JOB`. The files are then read back with libpvfs2 (`pvfs2-cp`) and parsed
by the operator's trace reader: one file per rank, and the requests the program really made.

This is how a LayoutPolicy learns from a run without any mount in the job's pods. Runs when
PFSLAYOUT_MPICH_PREFIX and ORANGEFS_PREFIX name the host-built trees; skipped, saying why, otherwise."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from pfslayout.shimconfig import Route, ShimConfig, TraceSettings, render_shim_config
from pfslayout.traces.model import OP_READ, OP_WRITE
from pfslayout.traces.shim import read_shim_trace_dir
from pfstestkit.ofs_loopback import MOUNT, OrangeFS, ServerGroup, free_ports, init_and_start, render, tool
from pfstestkit.romio import BLOCK, RANKS, Mpich


def test_every_rank_writes_its_trace_onto_orangefs(orangefs: OrangeFS, servers: ServerGroup, mpich: Mpich,
                                                  romio_check: Path, shim_lib: Path, tmp_path: Path) -> None:
    ports = free_ports(2)
    init_and_start(servers, render(servers, ports), ports)
    traces = f"{MOUNT}/traces"
    made = tool(orangefs, servers, "pvfs2-mkdir", traces)
    assert made.returncode == 0, made.stdout + made.stderr
    config = tmp_path / "shim.json"
    config.write_text(render_shim_config(ShimConfig(trace=TraceSettings(enabled=True, dir=f"pvfs2:{traces}"))))
    env = mpich.env(orangefs, PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"))
    argv = [str(mpich.prefix / "bin" / "mpiexec"), "-launcher", "fork", "-n", str(RANKS),
            "-genv", "LD_PRELOAD", str(shim_lib), "-genv", "PFSLAYOUT_SHIM_CONFIG", str(config),
            "-genv", "PFSLAYOUT_SHIM_JOB", "job-a", str(romio_check), f"pvfs2:{MOUNT}/data", str(BLOCK)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env,
                            cwd=servers.work.path)
    assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
    assert "cannot write the trace" not in result.stderr, result.stderr

    listing = tool(orangefs, servers, "pvfs2-ls", traces)
    names = sorted(x for x in listing.stdout.split() if x.endswith(".pfstrace"))
    assert names == [f"job-a.rank-{r:06d}.pfstrace" for r in range(RANKS)], listing.stdout
    local = tmp_path / "traces"
    local.mkdir()
    for name in names:
        copy = tool(orangefs, servers, "pvfs2-cp", f"{traces}/{name}", str(local / name))
        assert copy.returncode == 0, copy.stdout + copy.stderr
    trace = read_shim_trace_dir(local)
    assert sorted(set(trace.rank.tolist())) == list(range(RANKS))
    # romio_check: each rank writes its block, then reads the next rank's, both collective on one file
    for op in (OP_WRITE, OP_READ):
        sel = trace.op == op
        assert int(np.count_nonzero(sel)) == RANKS, (op, trace.op)
        assert set(trace.size[sel].tolist()) == {BLOCK}
    assert any(f.endswith(f"{MOUNT}/data") for f in trace.files), trace.files


def test_route_sends_a_programs_plain_paths_through_the_pvfs2_driver(
        orangefs: OrangeFS, servers: ServerGroup, mpich: Mpich, romio_check: Path, shim_lib: Path,
        tmp_path: Path) -> None:
    """`route`: the program names a plain path under the mount point, where nothing is mounted. Without the
    shim ROMIO takes it for a local file and fails; with the shim's route it reaches OrangeFS."""
    ports = free_ports(2)
    init_and_start(servers, render(servers, ports), ports)
    config = tmp_path / "shim.json"
    config.write_text(render_shim_config(ShimConfig(route=Route(path=MOUNT, prefix="pvfs2:"))))
    env = mpich.env(orangefs, PVFS2TAB_FILE=str(servers.work.path / "pvfs2tab"))
    plain = f"{MOUNT}/routed"  # no pvfs2: prefix
    assert not Path(MOUNT).exists(), f"{MOUNT} exists on this machine: the test needs it absent"

    def run(*shim: str) -> subprocess.CompletedProcess[str]:
        argv = [str(mpich.prefix / "bin" / "mpiexec"), "-launcher", "fork", "-n", str(RANKS), *shim,
                str(romio_check), plain, str(BLOCK)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env,
                              cwd=servers.work.path)
    without = run()
    assert without.returncode != 0, "a plain path reached OrangeFS without the shim: the test proves nothing"
    routed = run("-genv", "LD_PRELOAD", str(shim_lib), "-genv", "PFSLAYOUT_SHIM_CONFIG", str(config))
    assert routed.returncode == 0, routed.stdout + routed.stderr
    listing = tool(orangefs, servers, "pvfs2-ls", "-l", MOUNT)
    assert "routed" in listing.stdout, listing.stdout
    size = [line for line in listing.stdout.splitlines() if line.endswith(" routed")]
    assert size and str(RANKS * BLOCK) in size[0].split(), listing.stdout
