"""``plan_trace``'s fast path (per-target aggregates from numba passes, ``planner/target_aggregates.py``) against
the reference (``method="reference"``, the original per-target numpy code): identical plans — every
target, count, float and hint of ``model_dump()`` — on hypothesis-generated derived traces and on
hand-made cases (the benchmark's trace shape, hybrid replica sets, collective calls, ``per="both"``, file
ids beyond the file list, many sizes and groups, the sorted and hashed table variants, bad input)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfslayout.costmodel import SEED_ETHERNET, SEED_INFINIBAND
from pfslayout.costmodel.fast import Groups, group_requests, layout_totals, layout_totals_many
from pfslayout.errors import InputError
from pfslayout.planner.plan import plan_trace
from pfslayout.traces import OP_READ, OP_WRITE, Trace, derive

# a duplicate name (two ids, one target), a name without a directory, one at the root, a nested one
FILES = ["/a/x", "/a/y", "/b/z", "/b/w", "c", "/d/deep/f", "/top", "/a/x"]
PERS = ("directory", "file", "both")


def same_plan(t: Trace, **kw: object) -> None:
    """The fast and reference plans of one trace are identical (and so are their errors)."""
    def outcome(method: str) -> object:
        try:
            return plan_trace(copy.deepcopy(t), **kw, method=method).model_dump()  # type: ignore[arg-type]
        except Exception as err:  # whatever the reference raises, the fast path must raise alike
            return (type(err), str(err), getattr(err, "field", None))

    assert outcome("fast") == outcome("reference")


@pytest.fixture(params=["one pass", "sorted", "sorted, hashed slots"])
def tables(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way the fast path fills its tables: the one-pass dense table (what small traces get), the
    counting sort by target with a slot-indexed table per target, and with hashed slots."""
    from pfslayout.planner import target_aggregates

    if request.param != "one pass":
        monkeypatch.setattr(target_aggregates, "DENSE_LIMIT", 0)
    if request.param == "sorted, hashed slots":
        monkeypatch.setattr(target_aggregates, "SLOT_LIMIT", 0)
    return str(request.param)


def make(rank: np.ndarray, start: np.ndarray, end: np.ndarray, file_id: np.ndarray, *, size: np.ndarray,
         op: np.ndarray, offset: np.ndarray | None = None, nodes: np.ndarray | None = None,
         collective: np.ndarray | None = None, nprocs: int | None = None, files: list[str] | None = None) -> Trace:
    n = rank.shape[0]
    t = Trace(rank=rank.astype(np.int32), op=op.astype(np.uint8),
              offset=np.zeros(n, np.int64) if offset is None else offset.astype(np.int64),
              size=size.astype(np.int64), start=start.astype(np.float64), end=end.astype(np.float64),
              file_id=file_id.astype(np.int32), files=list(FILES if files is None else files), node_of_rank=nodes,
              collective=collective, nprocs=nprocs)
    return derive(t)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(1, 150))
    n_ranks = draw(st.integers(1, 10))
    ints = st.integers(0, 30)
    start = np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.float64) * 0.5
    length = np.array(draw(st.lists(st.sampled_from([0, 1, 1, 2, 5, 20]), min_size=n, max_size=n)), dtype=np.float64)
    rank = np.array(draw(st.lists(st.integers(0, n_ranks - 1), min_size=n, max_size=n)))
    # ids past the file list too: the planner names them "<file i>"
    file_id = np.array(draw(st.lists(st.integers(0, len(FILES) + 2), min_size=n, max_size=n)))
    size = np.array(draw(st.lists(st.sampled_from([0, 1, 4096, 4096, 65536, 1 << 20, 12345]), min_size=n,
                                  max_size=n)))
    offset = np.array(draw(st.lists(st.sampled_from([0, 4096, 8192, 65536]), min_size=n, max_size=n)))
    read_share = draw(st.sampled_from([0.0, 0.5, 0.8, 1.0]))
    op = np.where(np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))) < read_share, OP_READ, OP_WRITE)
    nodes = None
    if draw(st.booleans()):
        nodes = np.array(draw(st.lists(st.integers(0, 3), min_size=n_ranks, max_size=n_ranks)), dtype=np.int32)
    collective = None
    if draw(st.booleans()):
        collective = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    nprocs = draw(st.sampled_from([None, n_ranks, 32]))
    return make(rank, start, start + length, file_id, size=size, op=op, offset=offset, nodes=nodes,
                collective=collective, nprocs=nprocs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(traces(), st.sampled_from(PERS), st.sampled_from([1, 2, 4, 6, 8, 16]), st.sampled_from([0.1, 0.5, 10.0]),
       st.booleans(), st.sampled_from(["corrected", "printed"]), st.sampled_from([SEED_ETHERNET, SEED_INFINIBAND]))
def test_fast_plan_equals_reference(tables: str, t: Trace, per: str, n: int, delta: float, extra: bool,
                                    variant: str, params: object) -> None:
    # delta 10 makes every target a hybrid candidate; extra costs a g that does not divide n (⌊n/g⌋ width)
    same_plan(t, n=n, per=per, delta=delta, groups=[3] if extra and n >= 3 else None,
              cb_nodes=2 if extra else None, variant=variant, params=params)


def bench_shaped(records: int, ranks: int, per_node: int, seed: int = 1) -> Trace:
    """operator/bench/derive_throughput.py's synthetic run, smaller: a shared file and one per rank."""
    rng = np.random.default_rng(seed)
    per_rank = -(-records // ranks)
    rank = np.repeat(np.arange(ranks), per_rank)[:records]
    k = np.tile(np.arange(per_rank), ranks)[:records]
    duration = rng.gamma(4.0, 0.25e-3, records)
    start = k * 1.2e-3 + k // 64 * 5e-3 + rng.random(records) * 0.4e-3
    files = ["/scratch/run/shared.dat"] + [f"/scratch/run/out/part.{r}" for r in range(ranks)]
    file_id = np.where(rng.random(records) < 0.5, 0, rank + 1)
    size = rng.choice([4096, 65536, 1 << 20], size=records, p=[0.3, 0.5, 0.2])
    offset = k * size
    jump = rng.random(records) < 0.1
    offset[jump] = rng.integers(0, 1 << 30, int(jump.sum())) // 4096 * 4096
    op = np.where(rng.random(records) < 0.7, OP_READ, OP_WRITE)
    return make(rank, start, start + duration, file_id, size=size, op=op, offset=offset, files=files,
                nodes=(np.arange(ranks) // per_node).astype(np.int32))


@pytest.mark.parametrize("per", PERS)
def test_bench_shaped_trace(tables: str, per: str) -> None:
    t = bench_shaped(60_000, 64, 8)
    same_plan(t, n=8, per=per)
    same_plan(t, n=8, per=per, delta=10.0)  # hybrid decisions on the same aggregates


def test_default_tables_for_the_bench_shape() -> None:
    """The directory plan of the benchmark's shape takes the one-pass table, its per-file plan the sorted
    pass (many targets × slots); both give the reference's plan."""
    from pfslayout.planner import target_aggregates

    t = bench_shaped(60_000, 256, 16)
    assert t.p is not None and t.m is not None
    slots = (int(t.p.max()) + 1) * (int(t.m.max()) + 1) * 2
    assert 2 * slots <= target_aggregates.DENSE_LIMIT < 257 * slots
    same_plan(t, n=8, per="both")


def _mixed(read: bool, collective: bool = False) -> Trace:
    """test_planner's mixed trace: 64 MiB requests of one rank, then 4 KiB ones of 64 ranks (1-DH and
    1-DV country), p and m set by hand."""
    mib = 1 << 20
    n_a, n_b = 4, 64
    size = np.r_[np.full(n_a, 64 * mib), np.full(n_b, 4096)].astype(np.int64)
    rank = np.r_[np.zeros(n_a), np.arange(n_b)].astype(np.int32)
    k = size.size
    t = Trace(rank=rank, op=np.full(k, OP_READ if read else OP_WRITE, np.uint8), offset=np.zeros(k, np.int64),
              size=size, start=np.arange(k, dtype=float), end=np.arange(k, dtype=float) + 0.5,
              file_id=np.zeros(k, np.int32), files=["/data/mixed/shared.dat"],
              collective=(np.arange(k) >= n_a) if collective else None)
    t.p = np.r_[np.ones(n_a), np.full(n_b, 64)].astype(np.int32)
    t.m = np.ones(k, np.int32)
    t.sequential = np.ones(k, bool)
    return t


@pytest.mark.parametrize("per", PERS)
def test_hybrid(tables: str, per: str) -> None:
    t = _mixed(read=True)
    fast = plan_trace(t, 16, delta=10.0, per=per)
    assert all(d.mode == "hybrid" for d in fast.decisions)
    same_plan(t, n=16, delta=10.0, per=per)
    same_plan(_mixed(read=False), n=16, delta=10.0, per=per)  # write-heavy: considered, kept static


@pytest.mark.parametrize("per", PERS)
def test_collective(tables: str, per: str) -> None:
    t = _mixed(read=True, collective=True)
    d = plan_trace(t, 16, per=per, cb_nodes=4).decisions[0]
    assert d.collective is not None
    same_plan(t, n=16, per=per, cb_nodes=4)
    same_plan(t, n=16, per=per, delta=10.0)  # collective calls and hybrid routing on one target
    rng = np.random.default_rng(5)
    n = 3000
    rank = rng.integers(0, 16, n)
    start = np.round(rng.random(n) * 20, 2)
    t = make(rank, start, start + 0.3, rng.integers(0, len(FILES), n), size=rng.choice([4096, 1 << 20], n),
             op=rng.choice([OP_READ, OP_WRITE], n), nodes=(np.arange(16) // 4).astype(np.int32),
             collective=rng.random(n) < 0.3, nprocs=16)
    same_plan(t, n=8, per=per, cb_nodes=2)


def test_many_sizes_targets_and_groups(tables: str) -> None:
    """Enough distinct sizes and (p, m, random) groups per target that every hash table grows."""
    rng = np.random.default_rng(11)
    n, ranks = 20_000, 96
    rank = rng.integers(0, ranks, n)
    start = np.round(rng.random(n) * 30, 3)
    files = [f"/d{i % 5}/f{i}" for i in range(40)]
    t = make(rank, start, start + rng.gamma(2.0, 0.3, n), rng.integers(0, 45, n), size=rng.integers(0, 3000, n) * 7,
             op=rng.choice([OP_READ, OP_WRITE], n), nodes=(np.arange(ranks) // 3).astype(np.int32), files=files,
             collective=rng.random(n) < 0.05, nprocs=ranks)
    for per in PERS:
        same_plan(t, n=12, per=per, delta=0.3)


def test_wide_p_and_m_ranges(tables: str) -> None:
    """p and m set by hand over wide ranges: thousands of (p, m, random) groups per target (the slot hash
    grows) and more slots than a per-target table is given (hashed even by default)."""
    rng = np.random.default_rng(13)
    n = 30_000
    t = Trace(rank=rng.integers(0, 64, n).astype(np.int32), op=rng.choice([OP_READ, OP_WRITE], n).astype(np.uint8),
              offset=np.zeros(n, np.int64), size=rng.choice([4096, 8192, 1 << 20], n).astype(np.int64),
              start=np.arange(n, dtype=float), end=np.arange(n) + 0.5, file_id=rng.integers(0, 3, n).astype(np.int32),
              files=["/w/a", "/w/b", "/v/c"])
    p = rng.integers(1, 10_001, n)
    t.p = p.astype(np.int32)
    t.m = np.minimum(rng.integers(1, 21, n), p).astype(np.int32)
    t.sequential = rng.random(n) < 0.5
    for per in PERS:
        same_plan(t, n=16, per=per)


def test_sizes_past_2_to_53(tables: str) -> None:
    """Byte sums that float64 rounds: each group's sum must add in request order, as np.bincount does."""
    n = 64
    size = np.array([(1 << 53) + 1, 1, 3, (1 << 40) + 7] * (n // 4))
    t = make(np.arange(n) % 4, np.arange(n, dtype=float), np.arange(n) + 0.5, np.arange(n) % 3, size=size,
             op=np.full(n, OP_READ))
    for per in PERS:
        same_plan(t, n=4, per=per)


def test_trace_file_from_csv(tmp_path: Path) -> None:
    rows = ["rank,op,offset,size,start,end,file"]
    for r in range(16):
        for k in range(4):
            rows.append(f"{r},read,{(k * 16 + r) << 20},{1 << 20},{k}.0,{k}.5,/scratch/run/shared.dat")
    for r in range(2):
        for k in range(4):
            rows.append(f"{r},write,{k * 4096},4096,{10 + k}.0,{10 + k}.5,/home/u/out.{r}")
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    from pfslayout.traces import load_trace

    for per in PERS:
        same_plan(load_trace(path, "csv"), n=8, per=per, params=SEED_ETHERNET)


def test_bad_input_same_errors() -> None:
    t = bench_shaped(500, 8, 2)
    assert t.m is not None and t.p is not None
    same_plan(t, n=8, per="by-host")
    bad = copy.deepcopy(t)
    assert bad.m is not None and bad.p is not None
    bad.m[3] = bad.p[3] + 1
    same_plan(bad, n=8)
    bad = copy.deepcopy(t)
    assert bad.p is not None
    bad.p[0] = 0
    same_plan(bad, n=8)
    bad = copy.deepcopy(t)
    bad.size[7] = -1
    same_plan(bad, n=8)
    with pytest.raises(InputError, match="method"):
        plan_trace(t, 8, method="slow")


def test_unusual_columns_fall_back_to_the_reference() -> None:
    """Inputs outside what the passes read (negative ranks, float sizes) get the reference's plan (or its
    error: a negative rank breaks its ranks-per-file count), and int64 p/m the fast one."""
    t = bench_shaped(500, 8, 2)
    neg = copy.deepcopy(t)
    neg.rank = neg.rank - 3
    same_plan(neg, n=8, per="both")
    flt = copy.deepcopy(t)
    flt.size = flt.size.astype(np.float64)
    same_plan(flt, n=8, per="both")
    wide = copy.deepcopy(t)
    assert wide.p is not None and wide.m is not None
    wide.p = wide.p.astype(np.int64)
    wide.m = wide.m.astype(np.int64)
    same_plan(wide, n=8, per="both")


def test_numba_not_imported_by_the_planner() -> None:
    """The operator imports the planner and must not load numba (its JIT costs ~100 MB)."""
    import os
    import subprocess
    import sys

    code = ("import sys, pfslayout.planner, pfslayout.planner.plan, pfslayout.planner.extract_fast; "
            "print('numba' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("variant", ["corrected", "printed"])
def test_layout_totals_many_is_layout_totals_bit_for_bit(variant: str) -> None:
    """The batched costing of the fast path: each set's totals equal ``layout_totals`` of that set alone,
    exactly (sets of 0 to 400 groups: BLAS's vector kernel and its scalar tail; rows shared between sets)."""
    rng = np.random.default_rng(17)
    sets = []
    for k in [0, 1, 5, 16, 17, 33, 400, 0, 64, 3]:
        p = rng.integers(1, 40, k)
        m = np.minimum(p, rng.integers(1, 5, k))
        sets.append(group_requests(p, m, rng.integers(0, 1 << 22, k).astype(np.float64), rng.random(k) < 0.4))
    sizes = [len(g) for g in sets]
    def joined(column: str) -> np.ndarray:
        return np.concatenate([getattr(g, column) for g in sets])

    both = Groups(joined("p"), joined("m"), joined("random"), joined("count"), joined("bytes"), key=None)
    rows = group_requests(both.p, both.m, both.count, both.random, with_key=True)
    for layout, g in (("1-DV", None), ("1-DH", None), ("2-D", 4), ("2-D", 3)):
        many = layout_totals_many(layout, rows, rows.index(), both.count, both.bytes, sizes, 12, g, SEED_INFINIBAND,
                                  variant)
        assert many == [layout_totals(layout, gr, 12, g, SEED_INFINIBAND, variant) for gr in sets]
