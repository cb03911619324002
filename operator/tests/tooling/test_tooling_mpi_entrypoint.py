"""images/mpi/entrypoint.sh on the launcher waits until every host of the job's hostfile resolves, for
either MPI the MPI Operator (v2beta1) may run: MPICH's `HYDRA_HOST_FILE` (lines `host:slots`) and Open
MPI's `OMPI_MCA_orte_default_hostfile` (lines `host slots=N`); elsewhere it only execs its arguments.
`getent` is replaced by a stub that logs the names it is asked for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "images" / "mpi" / "entrypoint.sh"


def run(tmp_path: Path, env: dict[str, str], resolves: bool = True) -> tuple[list[str], str]:
    """Runs the entrypoint with `echo ran`; returns the names looked up and stdout."""
    stub = tmp_path / "bin"
    stub.mkdir(exist_ok=True)
    log = tmp_path / "getent.log"
    log.write_text("")
    (stub / "getent").write_text(f'#!/bin/sh\necho "$2" >> {log}\nexit {0 if resolves else 2}\n')
    (stub / "getent").chmod(0o755)
    full = {"PATH": f"{stub}:{os.environ['PATH']}", "PFSLAYOUT_DNS_WAIT_TRIES": "1", **env}
    proc = subprocess.run(["sh", str(ENTRYPOINT), "echo", "ran"], env=full, capture_output=True, text=True,
                          timeout=60, check=True)
    return log.read_text().split(), proc.stdout


def test_open_mpi_hostfile(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("j-worker-0.j-worker.ns.svc slots=2\n# a comment\n\n"
                        "  j-worker-1.j-worker.ns.svc\tslots=2 max_slots=4\nj-worker-2.j-worker.ns.svc # end\n")
    names, out = run(tmp_path, {"K_MPI_JOB_ROLE": "launcher", "OMPI_MCA_orte_default_hostfile": str(hostfile)})
    assert names == [f"j-worker-{i}.j-worker.ns.svc" for i in range(3)]
    assert out == "ran\n"


def test_mpich_hostfile(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("j-worker-0.j-worker.ns.svc:1\nj-worker-1.j-worker.ns.svc:1\n")
    names, out = run(tmp_path, {"K_MPI_JOB_ROLE": "launcher", "HYDRA_HOST_FILE": str(hostfile)})
    assert names == ["j-worker-0.j-worker.ns.svc", "j-worker-1.j-worker.ns.svc"]
    assert out == "ran\n"


def test_unresolved_names_are_waited_for_then_the_command_runs(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("a slots=1\n")
    names, out = run(tmp_path, {"K_MPI_JOB_ROLE": "launcher", "OMPI_MCA_orte_default_hostfile": str(hostfile)},
                     resolves=False)
    assert names == ["a"]
    assert out == "ran\n"


def test_workers_do_not_wait(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("a slots=1\n")
    names, out = run(tmp_path, {"K_MPI_JOB_ROLE": "worker", "OMPI_MCA_orte_default_hostfile": str(hostfile)})
    assert names == []
    assert out == "ran\n"
