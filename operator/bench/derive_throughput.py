"""Throughput of ``pfslayout.traces.derive`` on a synthetic trace, fast (default) and reference paths in
the same run; prints records per second and whether both derive the same p, m and sequential flags.

    python operator/bench/derive_throughput.py [--records 2000000] [--ranks 256] [--ranks-per-node 16]

The trace mimics a bulk-synchronous MPI run: every rank issues requests back to back with jittered
durations, phases separated by compute gaps, a few long requests spanning many of the others' requests
(the case that needs the gap correction), spread over a shared file and per-rank files in two
directories. It also times a plain Python per-request loop (the obvious active-set sweep) on a
subsample and prints the speed-up measured in the same run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pfslayout.traces import OP_READ, OP_WRITE, Trace, derive


def synthetic(records: int, ranks: int, ranks_per_node: int, seed: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    per_rank = -(-records // ranks)
    rank = np.repeat(np.arange(ranks, dtype=np.int32), per_rank)[:records]
    k = np.tile(np.arange(per_rank), ranks)[:records]
    duration = rng.gamma(4.0, 0.25e-3, records)
    long = rng.random(records) < 1e-4
    duration[long] *= 200  # a few long requests overlap many short ones
    phase = k // 64
    start = k * 1.2e-3 + phase * 5e-3 + rng.random(records) * 0.4e-3
    files = ["/scratch/run/shared.dat"] + [f"/scratch/run/out/part.{r}" for r in range(ranks)]
    shared = rng.random(records) < 0.5
    file_id = np.where(shared, 0, rank + 1).astype(np.int32)
    size = rng.choice([4096, 65536, 1 << 20], size=records, p=[0.3, 0.5, 0.2]).astype(np.int64)
    offset = (k * size).astype(np.int64)
    jump = rng.random(records) < 0.1
    offset[jump] = rng.integers(0, 1 << 30, int(jump.sum())) // 4096 * 4096
    return Trace(rank=rank, op=np.where(rng.random(records) < 0.7, OP_READ, OP_WRITE).astype(np.uint8),
                 offset=offset, size=size, start=start, end=start + duration, file_id=file_id, files=files,
                 node_of_rank=(np.arange(ranks) // ranks_per_node).astype(np.int32))


def python_loop_p(t: Trace) -> list[int]:
    """Reference: a per-request sweep over start/end events with an active set per file set."""
    import os

    sets = [os.path.dirname(f) for f in t.files]
    out = [0] * len(t)
    events = sorted([(float(t.start[i]), 1, i) for i in range(len(t))]
                    + [(float(t.end[i]), 0, i) for i in range(len(t))])
    active: dict[str, dict[int, int]] = {}
    pending: dict[int, set[int]] = {}
    for _, kind, i in events:
        key = sets[t.file_id[i]]
        ranks = active.setdefault(key, {})
        if kind == 1:
            r = int(t.rank[i])
            ranks[r] = ranks.get(r, 0) + 1
            pending[i] = set(ranks)
            for j, seen in pending.items():
                if sets[t.file_id[j]] == key:
                    seen.add(r)
        else:
            r = int(t.rank[i])
            ranks[r] -= 1
            if ranks[r] == 0:
                del ranks[r]
            out[i] = len(pending.pop(i))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--ranks-per-node", type=int, default=16)
    ap.add_argument("--loop-records", type=int, default=20_000, help="subsample for the Python loop")
    args = ap.parse_args()

    derive(synthetic(1000, 8, 2))  # JIT compilation (or loading the cached code) is not timed
    ref = synthetic(args.records, args.ranks, args.ranks_per_node)
    t0 = time.perf_counter()
    derive(ref, method="reference")
    ref_elapsed = time.perf_counter() - t0
    trace = synthetic(args.records, args.ranks, args.ranks_per_node)
    t0 = time.perf_counter()
    derive(trace)
    elapsed = time.perf_counter() - t0
    rate = args.records / elapsed
    same = all(np.array_equal(getattr(trace, k), getattr(ref, k)) for k in ("p", "m", "sequential", "dominant_size"))
    print(f"derive: {args.records:,} records, {args.ranks} ranks, {args.ranks // args.ranks_per_node} nodes: "
          f"fast {elapsed:.2f} s = {rate:,.0f} records/s; reference {ref_elapsed:.2f} s = "
          f"{args.records / ref_elapsed:,.0f} records/s; {ref_elapsed / elapsed:.1f}x; identical: {same}")
    print(f"  p: mean {trace.p.mean():.1f}, max {trace.p.max()}; m: mean {trace.m.mean():.1f}; "  # type: ignore[union-attr]
          f"sequential {trace.sequential.mean():.0%}")  # type: ignore[union-attr]

    small = synthetic(args.loop_records, args.ranks, args.ranks_per_node)
    t0 = time.perf_counter()
    reference = python_loop_p(small)
    loop_rate = args.loop_records / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    derive(small)
    small_rate = args.loop_records / (time.perf_counter() - t0)
    agree = reference == small.p.tolist()  # type: ignore[union-attr]
    print(f"same {args.loop_records:,}-record subsample: python loop (p only) {loop_rate:,.0f} records/s, "
          f"derive (p, m, sequential, sizes) {small_rate:,.0f} records/s = {small_rate / loop_rate:.1f}x; "
          f"same p: {agree}")


if __name__ == "__main__":
    main()
