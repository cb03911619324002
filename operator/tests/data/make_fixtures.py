"""Regenerate the small fixture files beside this script (deterministic; run from anywhere):

    python operator/tests/data/make_fixtures.py

* ``probe-synthetic.json`` — pfsprobe/1 output of a compact designed grid (12 configurations × 2 ops)
  for 4 servers, 2 nodes × 4 ranks,
  simulated from KNOWN_PARAMS with 2 % log-normal noise (seed 7).
* ``ior-summary.json`` — IOR's ``-O summaryFormat=JSON`` document (key names, nesting and number
  formatting as hpc/ior's src/ior-output.c prints them: top-level Version/Began/Command line/Machine,
  ``tests[]`` with Parameters, Options, a flat Results list of per-repetition write/read/remove entries
  and ``max``, then ``summary[]`` and Finished), for tests on a 4-server OrangeFS whose directories are
  named by layout; times simulated from KNOWN_PARAMS with 1 % noise.
* ``ior-real-posix.json`` is NOT made here: it is real output of IOR 4.1.0+dev (hpc/ior built locally
  outside this repository, which keeps no IOR code or build script) on the development machine —
  ``mpirun -np 2 ior -f calib.ior -O summaryFormat=JSON -O summaryFile=ior-real-posix.json`` with two
  tests (64 KiB sequential into a directory named 1-DV; 4 KiB random into one named 2-D-g2).
* ``trace-small.csv`` — a 2-node, 4-rank CSV trace with a known concurrency structure.
* ``shim-small/`` — the same requests as shim binary traces (one file per rank).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from pfslayout.calibration import design_grid, model_time, simulate_probe
from pfslayout.costmodel import CostParams
from pfslayout.traces import OP_READ, OP_WRITE, write_shim_trace

HERE = Path(__file__).resolve().parent
MIB = 1 << 20
KNOWN_PARAMS = CostParams(e=2.0e-4, v=1.0 / (400 * MIB), alpha_seq=6.0e-5, alpha_rand=4.0e-4, beta=1.0 / (150 * MIB))


class _IorCell:
    def __init__(self, layout: str, g: int | None, p: int, m: int, xfer: int, reqs: int, random: bool) -> None:
        self.layout, self.g, self.p, self.m = layout, g, p, m
        self.request_size, self.requests_per_rank, self.random = xfer, reqs, random


def ior_document(servers: int = 4, reps: int = 3, seed: int = 11) -> dict:
    rng = np.random.default_rng(seed)
    configs = [  # (layout, g, tasks, tasks per node, transfer size, random)
        ("1-DH", None, 8, 4, 65536, False), ("1-DH", None, 2, 1, 1 * MIB, True),
        ("1-DV", None, 8, 4, 1 * MIB, False), ("1-DV", None, 4, 4, 4096, True),
        ("2-D", 2, 4, 2, 256 * 1024, False), ("2-D", 2, 8, 4, 4096, True),
        ("1-DV", None, 1, 1, 4 * MIB, False), ("1-DH", None, 8, 4, 4096, True),
    ]
    tests, summary = [], []
    for tid, (layout, g, tasks, tpn, xfer, random) in enumerate(configs):
        block, segments = 16 * xfer, 2
        cell = _IorCell(layout, g, tasks, tpn, xfer, (block // xfer) * segments, random)
        base = model_time(cell, servers, KNOWN_PARAMS)
        directory = layout + (f"-g{g}" if g else "")
        name = f"/mnt/orangefs/ior/{directory}/testfile"
        results: list[dict[str, Any]] = []
        times: dict[str, list[float]] = {"write": [], "read": []}
        for _ in range(reps):
            for access in ("write", "read"):
                t = base * float(np.exp(0.01 * rng.standard_normal()))  # the read/write phase
                total = t + 0.0016  # plus open and close
                times[access].append(total)
                agg = tasks * block * segments
                # IOR prints every double with %.4f: bw over open-to-close, iops over the access phase
                results.append({"access": access, "bwMiB": round(agg / total / MIB, 4), "blockKiB": block / 1024,
                                "xferKiB": xfer / 1024, "iops": round(agg / xfer / t, 4),
                                "latency": round(t / cell.requests_per_rank, 4), "openTime": 0.0012,
                                "wrRdTime": round(t, 4), "closeTime": 0.0004, "totalTime": round(total, 4)})
            results.append({"access": "remove", "totalTime": 0.0021})
        parameters = {
            "testID": tid, "refnum": 0, "api": "MPIIO", "platform": "ior-node0(4)", "testFileName": name,
            "deadlineForStonewall": 0, "stoneWallingWearOut": 0, "maxTimeDuration": 0, "outlierThreshold": 0,
            "options": "", "dryRun": 0, "nodes": tasks // tpn, "memoryPerTask": 0, "memoryPerNode": 0,
            "tasksPerNode": tpn, "repetitions": reps, "multiFile": 0, "interTestDelay": 0, "fsync": 0,
            "fsyncperwrite": 0, "useExistingTestFile": 0, "uniqueDir": 0, "singleXferAttempt": 0, "readFile": 1,
            "writeFile": 1, "filePerProc": 1, "reorderTasks": 0, "reorderTasksRandom": 0,
            "reorderTasksRandomSeed": 0, "randomOffset": int(random), "checkWrite": 0, "checkRead": 0,
            "dataPacketType": 0, "keepFile": 0, "keepFileWithError": 0, "warningAsErrors": 0, "verbose": 0,
            "data packet type": "g", "setTimeStampSignature/incompressibleSeed": 0, "collective": 0,
            "segmentCount": segments, "transferSize": xfer, "blockSize": block,
        }
        options = {
            "api": "MPIIO", "apiVersion": "(4.1)", "test filename": name, "access": "file-per-process",
            "type": "independent", "segments": segments, "ordering in a file": "random" if random else "sequential",
            "ordering inter file": "no tasks offsets", "nodes": tasks // tpn, "tasks": tasks,
            "clients per node": tpn, "memoryBuffer": "CPU", "dataAccess": "CPU", "GPUDirect": "0",
            "repetitions": reps, "xfersize": f"{xfer} bytes", "blocksize": f"{block} bytes",
            "aggregate filesize": f"{tasks * block * segments} bytes",
        }
        tests.append({"TestID": tid, "StartTime": "Sun Nov 22 06:00:00 2026", "Path": name,
                      "Capacity": "49.0 GiB", "Used Capacity": "12.3%", "Inodes": "3.1 Mi", "Used Inodes": "0.1%",
                      "Parameters": parameters, "Options": options, "Results": results,
                      "max": {"writeMiB": max(r["bwMiB"] for r in results if r["access"] == "write"),
                              "writeMB": 0.0, "readMiB": max(r["bwMiB"] for r in results if r["access"] == "read"),
                              "readMB": 0.0}})
        for access in ("write", "read"):
            mean = float(np.mean(times[access]))
            bws = [tasks * block * segments / t / MIB for t in times[access]]
            ops = [tasks * block * segments / xfer / t for t in times[access]]
            summary.append({
                "operation": access, "API": "MPIIO", "TestID": tid, "ReferenceNumber": 0, "segmentCount": segments,
                "blockSize": block, "transferSize": xfer, "numTasks": tasks, "tasksPerNode": tpn,
                "repetitions": reps, "filePerProc": 1, "reorderTasks": 0, "taskPerNodeOffset": 1,
                "reorderTasksRandom": 0, "reorderTasksRandomSeed": 0, "bwMaxMIB": round(max(bws), 4),
                "bwMinMIB": round(min(bws), 4), "bwMeanMIB": round(float(np.mean(bws)), 4),
                "bwStdMIB": round(float(np.std(bws)), 4), "OPsMax": round(max(ops), 4),
                "OPsMin": round(min(ops), 4), "OPsMean": round(float(np.mean(ops)), 4),
                "OPsSD": round(float(np.std(ops)), 4), "MeanTime": round(mean, 4),
                    "xsizeMiB": round(tasks * block * segments / MIB, 4),
            })
    return {"Version": "4.1.0+dev", "Began": "Sun Nov 22 06:00:00 2026",
            "Command line": "ior -f calibrate.ior -O summaryFormat=JSON", "Machine": "Linux ior-node0",
            "tests": tests, "summary": summary, "Finished": "Sun Nov 22 06:01:00 2026"}


# rank, node, file, op, offset, size, start, end — ranks 0,1 on node a; 2,3 on node b.
# Phase 1 (t 0–1): all four ranks write their own 1 MiB blocks of shared.dat concurrently.
# Phase 2 (t 2–3): ranks 0 and 2 read 64 KiB sequentially from per-rank files; ranks 1, 3 idle.
# Phase 3 (t 4–6): rank 1 reads one long random request while rank 3 does two short ones inside it.
SMALL_TRACE = [
    (0, "a", "/data/run/shared.dat", "write", 0 * MIB, MIB, 0.00, 1.00),
    (1, "a", "/data/run/shared.dat", "write", 1 * MIB, MIB, 0.05, 1.00),
    (2, "b", "/data/run/shared.dat", "write", 2 * MIB, MIB, 0.10, 0.90),
    (3, "b", "/data/run/shared.dat", "write", 3 * MIB, MIB, 0.00, 0.95),
    (0, "a", "/data/run/part.0", "read", 0, 65536, 2.00, 2.40),
    (0, "a", "/data/run/part.0", "read", 65536, 65536, 2.40, 2.80),
    (2, "b", "/data/run/part.2", "read", 0, 65536, 2.10, 2.50),
    (2, "b", "/data/run/part.2", "read", 65536, 65536, 2.50, 2.90),
    (1, "a", "/data/run/shared.dat", "read", 5 * MIB, 4096, 4.00, 6.00),
    (3, "b", "/data/run/shared.dat", "read", 9 * MIB, 4096, 4.50, 4.60),
    (3, "b", "/data/run/shared.dat", "read", 7 * MIB, 4096, 5.00, 5.10),
]


def write_small_csv(path: Path) -> None:
    lines = ["rank,op,offset,size,start,end,file,node"]
    lines += [f"{r},{op},{off},{size},{s:.2f},{e:.2f},{f},{node}" for r, node, f, op, off, size, s, e in SMALL_TRACE]
    path.write_text("\n".join(lines) + "\n")


def write_small_shim(directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir()
    node_id = {"a": 0, "b": 2}  # lowest world rank on the node, as the shim records it
    for rank in range(4):
        rows = [row for row in SMALL_TRACE if row[0] == rank]
        files = sorted({row[2] for row in rows})
        write_shim_trace(
            directory / f"run.rank-{rank:06d}.pfstrace", rank=rank, comm_size=4, files=files,
            start=np.array([r[6] for r in rows]), end=np.array([r[7] for r in rows]),
            offset=np.array([r[4] for r in rows]), size=np.array([r[5] for r in rows]),
            file_id=np.array([files.index(r[2]) for r in rows]),
            op=np.array([OP_READ if r[3] == "read" else OP_WRITE for r in rows]),
            node_id=node_id[rows[0][1]], ranks_on_node=2, epoch=1.7e9,
        )


def main() -> None:
    grid = design_grid(4, 2, 4, max_configs=12)
    (HERE / "probe-synthetic.json").write_text(json.dumps(simulate_probe(grid, KNOWN_PARAMS, noise=0.02, seed=7),
                                                          indent=1) + "\n")
    (HERE / "ior-summary.json").write_text(json.dumps(ior_document(), indent=2) + "\n")
    write_small_csv(HERE / "trace-small.csv")
    write_small_shim(HERE / "shim-small")


if __name__ == "__main__":
    main()
