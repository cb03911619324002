#!/usr/bin/env python3
"""Trace → plan end to end on one core (issue 12 item 3): read the shim's binary trace, derive p, m and
the access pattern, cost every layout, decide — today's path and the fast one on the same trace in one run.

    python operator/bench/trace_to_plan.py [--records 1000000] [--ranks 256] [--ranks-per-node 16] [--repeat 3]

The trace is derive_throughput.py's synthetic bulk-synchronous run (a shared file and per-rank files, a
few long requests the gap correction exists for), written with the reference shim writer, one file per
rank. The two paths differ in the derive stage only (``derive(method="reference")``, the original
sort/merge-sort-tree code, vs the default fast path); reading and planning are the same code. Prints, per
path, records/s of each stage (best of --repeat) and in total, the fast/today ratio, the peak memory of
the whole path against the trace's own size (the Trace's arrays) — both the Python heap (tracemalloc)
and the peak resident set of a fresh process running it (which also sees numba's allocations) — and
whether p, m, sequential, dominant sizes and every plan decision and candidate cost are identical. The
fast path's one-time JIT compilation (cached on disk after the first run) is timed apart.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from derive_throughput import synthetic  # type: ignore[import-not-found]  # noqa: E402  (a sibling script)

from pfslayout.planner import plan_trace  # noqa: E402
from pfslayout.planner.models import Plan  # noqa: E402
from pfslayout.traces import Trace, derive, read_shim_trace_dir, write_shim_trace  # noqa: E402

GOAL = 10e6
METHODS = {"today": "reference", "fast": "fast"}
RAW = ("rank", "op", "offset", "size", "start", "end", "file_id", "collective", "node_of_rank")
DERIVED = ("p", "m", "sequential", "dominant_size", "file_set")


def write_trace(directory: Path, records: int, ranks: int, per_node: int) -> int:
    t = synthetic(records, ranks, per_node)
    for r in range(ranks):
        idx = np.flatnonzero(t.rank == r)
        idx = idx[np.argsort(t.start[idx], kind="stable")]  # the shim appends in call order
        write_shim_trace(directory / f"run.rank-{r:06d}.pfstrace", rank=r, comm_size=ranks, files=t.files,
                         start=t.start[idx], end=t.end[idx], offset=t.offset[idx], size=t.size[idx],
                         file_id=t.file_id[idx], op=t.op[idx], node_id=r // per_node * per_node,
                         ranks_on_node=per_node)
    return sum(p.stat().st_size for p in directory.glob("*.pfstrace"))


def trace_bytes(t: Trace) -> int:
    """The trace's own size: its raw per-request (and per-rank) arrays as read."""
    return sum(int(getattr(t, k).nbytes) for k in RAW if getattr(t, k) is not None)


def run(directory: str, method: str, servers: int) -> tuple[Trace, Plan, list[float]]:
    t0 = time.perf_counter()
    trace = read_shim_trace_dir(directory)
    t1 = time.perf_counter()
    derive(trace, method=method)
    t2 = time.perf_counter()
    plan = plan_trace(trace, servers)
    t3 = time.perf_counter()
    return trace, plan, [t1 - t0, t2 - t1, t3 - t2]


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def peak_memory(directory: str, method: str, servers: int) -> tuple[int, int, int]:
    """(peak Python heap, peak resident set growth, the trace's own size) of one whole path, bytes, in a
    fresh process: there the resident peak (VmHWM, which also sees numba's allocations, unlike
    tracemalloc) starts from the interpreter with its modules and JIT code loaded."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", directory, method, str(servers)],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1]), int(out[2])


def _memory_child(directory: str, method: str, servers: int) -> None:
    with tempfile.TemporaryDirectory() as small:  # every stage's JIT code loaded before the baseline
        write_trace(Path(small), 2000, 8, 2)
        run(small, method, servers)
    gc.collect()
    base = _status_kib("VmRSS")
    tracemalloc.start()
    trace, _, _ = run(directory, method, servers)
    _, heap = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(heap, (_status_kib("VmHWM") - base) * 1024, trace_bytes(trace))


def identical(a: tuple[Trace, Plan], b: tuple[Trace, Plan]) -> bool:
    same = all(np.array_equal(getattr(a[0], k), getattr(b[0], k)) for k in DERIVED)
    return same and a[1].model_dump() == b[1].model_dump()


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--memory-child":
        _memory_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--ranks-per-node", type=int, default=16)
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per path; the best is reported")
    args = ap.parse_args()
    n = args.records
    with tempfile.TemporaryDirectory() as tmp:
        size = write_trace(Path(tmp), n, args.ranks, args.ranks_per_node)
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as small:  # compile (or load the cached) JIT code of every stage once
            write_trace(Path(small), 2000, 8, 2)
            run(small, "fast", args.servers)
        jit = time.perf_counter() - t0
        results: dict[str, tuple[Trace, Plan]] = {}
        stages: dict[str, np.ndarray] = {}
        for _ in range(args.repeat):  # alternate the paths so machine load hits both alike
            for name, method in METHODS.items():
                trace, plan, dt = run(tmp, method, args.servers)
                results[name] = (trace, plan)
                stages[name] = np.minimum(stages.get(name, np.full(3, np.inf)), dt)
        same = identical(results["today"], results["fast"])
        own = trace_bytes(results["fast"][0])
        plan = results["fast"][1]
        results.clear()
        memory = {name: peak_memory(tmp, method, args.servers) for name, method in METHODS.items()}
    print(f"trace: {n:,} records, {args.ranks} ranks, {size / 2**20:.1f} MiB on disk, {own / 2**20:.1f} MiB as "
          f"arrays; {len(plan.decisions)} decisions ({', '.join(d.choice for d in plan.decisions)}); "
          f"JIT warm-up {jit:.2f} s (not counted)")
    labels = ("read shim trace", "derive p, m, pattern", "cost + decide")
    print(f"  {'stage':22s} {'today M rec/s':>14s} {'fast M rec/s':>13s} {'fast/today':>11s}")
    for i, label in enumerate(labels):
        a, b = stages["today"][i], stages["fast"][i]
        print(f"  {label:22s} {n / a / 1e6:14.2f} {n / b / 1e6:13.2f} {a / b:10.1f}x")
    tot = {k: float(v.sum()) for k, v in stages.items()}
    print(f"  {'end to end':22s} {n / tot['today'] / 1e6:14.2f} {n / tot['fast'] / 1e6:13.2f} "
          f"{tot['today'] / tot['fast']:10.1f}x   (goal {GOAL / 1e6:.0f} M records/s: fast path at "
          f"{n / tot['fast'] / GOAL:.2f} of it)")
    for name in METHODS:
        heap, rss, own = memory[name]
        print(f"  peak memory, {name:5s}: Python heap {heap / own:.2f}x, resident set growth {rss / own:.2f}x "
              f"the trace's arrays (goal <= 2x)")
    print(f"  identical p, m, sequential, dominant sizes and plan: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
