"""images/mpi/entrypoint.sh on the launcher waits until every host of the job's hostfile resolves, for
either MPI the MPI Operator (v2beta1) may run: MPICH's `HYDRA_HOST_FILE` (lines `host:slots`) and Open
MPI's `OMPI_MCA_orte_default_hostfile` (lines `host slots=N`); elsewhere it only execs its arguments.
An MPICH launcher gets `HYDRA_IFACE` when the job does not set it and the interface exists.
`getent` is replaced by a stub that logs the names it is asked for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "images" / "mpi" / "entrypoint.sh"


def run(tmp_path: Path, env: dict[str, str], resolves: bool = True,
        command: tuple[str, ...] = ("echo", "ran")) -> tuple[list[str], str]:
    """Runs the entrypoint with `command`; returns the names looked up and stdout."""
    stub = tmp_path / "bin"
    stub.mkdir(exist_ok=True)
    log = tmp_path / "getent.log"
    log.write_text("")
    (stub / "getent").write_text(f'#!/bin/sh\necho "$2" >> {log}\nexit {0 if resolves else 2}\n')
    (stub / "getent").chmod(0o755)
    full = {"PATH": f"{stub}:{os.environ['PATH']}", "PFSLAYOUT_DNS_WAIT_TRIES": "1", **env}
    proc = subprocess.run(["sh", str(ENTRYPOINT), *command], env=full, capture_output=True, text=True,
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


SHOW_IFACE = ("sh", "-c", 'echo "${HYDRA_IFACE-unset}"')


def test_an_mpich_launcher_names_the_pod_interface_for_hydra(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("a:1\n")
    mpich = {"K_MPI_JOB_ROLE": "launcher", "HYDRA_HOST_FILE": str(hostfile)}
    # `lo` exists on every Linux machine; a pod's interface is eth0 (the default)
    assert run(tmp_path, {**mpich, "PFSLAYOUT_HYDRA_IFACE": "lo"}, command=SHOW_IFACE)[1] == "lo\n"
    # the job's own choice is kept
    assert run(tmp_path, {**mpich, "PFSLAYOUT_HYDRA_IFACE": "lo", "HYDRA_IFACE": "ib0"},
               command=SHOW_IFACE)[1] == "ib0\n"
    # no such interface: Hydra is left to its default (the hostname)
    assert run(tmp_path, {**mpich, "PFSLAYOUT_HYDRA_IFACE": "pfsnone0"}, command=SHOW_IFACE)[1] == "unset\n"


def test_only_an_mpich_launcher_gets_hydra_iface(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("a slots=1\n")
    ompi = {"K_MPI_JOB_ROLE": "launcher", "OMPI_MCA_orte_default_hostfile": str(hostfile),
            "PFSLAYOUT_HYDRA_IFACE": "lo"}
    assert run(tmp_path, ompi, command=SHOW_IFACE)[1] == "unset\n"
    worker = {"K_MPI_JOB_ROLE": "worker", "HYDRA_HOST_FILE": str(hostfile), "PFSLAYOUT_HYDRA_IFACE": "lo"}
    assert run(tmp_path, worker, command=SHOW_IFACE)[1] == "unset\n"
