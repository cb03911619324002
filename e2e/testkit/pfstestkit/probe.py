"""The calibration probe under test: `pfsprobe` built for each MPI, run under real mpirun, and its
`pfsprobe/1` document checked."""

from __future__ import annotations

import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest

from pfstestkit import REPO

SHIM = REPO / "shim"
# The CostCalibration grid of the e2e tests of the operator's calibration mechanics (runs, restarts,
# failures, the probe slot): 32 cells on 4 servers in 2-3 probe minutes. policies/costcalibration.yaml's
# own grid, every configuration at three sizes, is 144 cells — what a user runs, and the demo does.
SMALL_CALIBRATION_GRID = {"nodes": 2, "ranksPerNode": 2, "requestSizes": [4096, 65536, 1048576],
                          "requestsPerRank": 8, "minBytesPerRank": 4 << 20, "repetitions": 3, "maxConfigs": 16}


PROBE_SRC = SHIM / "probe"


class MpiImpl(TypedDict):
    """How to build and launch under one MPI: its compiler wrapper, its launcher and the launcher's -np flag."""

    mpicc: str
    mpirun: list[str]
    np: str


IMPLS: dict[str, MpiImpl] = {
    "openmpi": {"mpicc": "mpicc.openmpi", "mpirun": ["mpirun.openmpi", "--oversubscribe"], "np": "-np"},
    "mpich": {"mpicc": "mpicc.mpich", "mpirun": ["mpirun.mpich"], "np": "-n"},
}


# Open MPI refuses root without these; harmless for MPICH and for non-root users.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


TOP_KEYS = {"format", "tool", "started", "platform", "cells"}


TOOL_KEYS = {"name", "version", "mpi"}


PLATFORM_KEYS = {"ranks", "nodes", "ranks_per_node", "servers", "backend"}


CELL_KEYS = {"layout", "g", "target", "op", "pattern", "sharing", "p", "m", "request_size",
             "requests_per_rank", "repetitions", "times", "median", "min", "max", "iqr"}


@dataclass
class Probe:
    impl: str
    binary: Path

    def run(self, nprocs: int, args: list[str], timeout: float = 240,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        spec = IMPLS[self.impl]
        cmd = [*spec["mpirun"], spec["np"], str(nprocs), str(self.binary), *args]
        env = {**os.environ, **MPI_ENV, **(env or {})}
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def newest_probe_source() -> float:
    return max(p.stat().st_mtime for p in PROBE_SRC.iterdir() if p.is_file())


def build_probe(impl: str, where: Path) -> Path:
    spec = IMPLS[impl]
    configure = ["cmake", "-S", str(SHIM), "-B", str(where), f"-DMPI_C_COMPILER={spec['mpicc']}",
                 "-DPFSLAYOUT_BUILD_TESTS=OFF"]
    if os.environ.get("ORANGEFS_PREFIX"):
        configure.append(f"-DORANGEFS_PREFIX={os.environ['ORANGEFS_PREFIX']}")
    for cmd in (configure, ["cmake", "--build", str(where), "--target", "pfsprobe", "-j", "2"]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return where / "probe" / "pfsprobe"


def check_doc(doc: Any, *, ranks: int, backend: str, servers: int) -> None:
    """Every field of docs/probe-format.md, with its type and range, and statistics that match `times`."""
    assert isinstance(doc, dict) and set(doc) == TOP_KEYS, sorted(doc)
    assert doc["format"] == "pfsprobe/1"
    tool = doc["tool"]
    assert set(tool) == TOOL_KEYS and tool["name"] == "pfsprobe"
    assert isinstance(tool["version"], str) and tool["version"]
    assert isinstance(tool["mpi"], str) and tool["mpi"] and "\n" not in tool["mpi"]
    started = doc["started"]
    assert isinstance(started, str) and len(started) == 20 and started.endswith("Z") and started[10] == "T"
    plat = doc["platform"]
    assert set(plat) == PLATFORM_KEYS
    assert plat == {"ranks": ranks, "nodes": plat["nodes"], "ranks_per_node": plat["ranks_per_node"],
                    "servers": servers, "backend": backend}
    assert isinstance(plat["nodes"], int) and 1 <= plat["nodes"] <= ranks
    assert isinstance(plat["ranks_per_node"], int) and 1 <= plat["ranks_per_node"] <= ranks
    assert plat["nodes"] * plat["ranks_per_node"] >= ranks
    cells = doc["cells"]
    assert isinstance(cells, list) and cells
    for i, c in enumerate(cells):
        where = f"cells[{i}]"
        assert set(c) == CELL_KEYS, (where, sorted(c))
        assert c["layout"] in ("1-DH", "1-DV", "2-D", "default"), where
        if c["layout"] == "2-D":
            assert isinstance(c["g"], int) and 1 <= c["g"] <= servers, where
        else:
            assert c["g"] is None, where
        assert isinstance(c["target"], str) and c["target"], where
        assert c["op"] in ("read", "write") and c["pattern"] in ("sequential", "random"), where
        assert c["sharing"] in ("file-per-process", "shared"), where
        for key in ("p", "m", "request_size", "requests_per_rank", "repetitions"):
            assert isinstance(c[key], int) and not isinstance(c[key], bool) and c[key] >= 1, (where, key)
        assert c["p"] <= ranks and c["m"] <= c["p"] and c["m"] <= plat["ranks_per_node"], where
        times = c["times"]
        assert isinstance(times, list) and len(times) == c["repetitions"], where
        assert all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in times), (where, times)
        # Plausible: a handful of small requests on a local disk take well under a minute each.
        assert max(times) < 60, (where, times)
        assert c["max"] >= c["median"] >= c["min"] > 0, where
        assert c["min"] == pytest.approx(min(times), rel=1e-6) and c["max"] == pytest.approx(max(times), rel=1e-6)
        q1, med, q3 = np.percentile(times, [25, 50, 75])
        assert c["median"] == pytest.approx(med, rel=1e-6), where
        assert c["iqr"] == pytest.approx(q3 - q1, rel=1e-6, abs=1e-12) and c["iqr"] >= 0, where


def cell_key(c: dict[str, Any]) -> tuple[Any, ...]:
    return (c["layout"], c["g"], c["sharing"], c["p"], c["request_size"], c["pattern"], c["op"])


def probe_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("pfsprobe:")]
