"""The fast derive path against the reference (``derive(..., method="reference")``): identical p, m,
sequential flags, dominant sizes and file sets — on hypothesis-generated traces and on hand-made edge
cases (many ranks and nodes, collective records, zero-length and negative-length requests, shared
start/end instants, requests spanning many others, several directories, both ``group`` and ``m_of``)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfslayout.traces import OP_READ, OP_WRITE, Trace, derive, derive_fast
from pfslayout.traces.derive_kernels.overlap_counts import PAD_WORDS, _bits_short, _bits_words, _count_bits
from pfslayout.traces.derive_kernels.start_order import start_order
from pfslayout.traces.derive_kernels.time_argsort import stable_argsort

FILES = ["/a/x", "/a/y", "/b/z", "/b/w", "c", "/d/deep/f"]
SETTINGS = [("directory", "issuing-node"), ("directory", "busiest-node"), ("file", "issuing-node"),
            ("file", "busiest-node")]


def assert_same(t: Trace, group: str, m_of: str, shift: int | None = None) -> None:
    """``shift``: the sweep's windows of about 2^shift requests instead of the default (small traces fit one)."""
    default = derive_fast.WINDOW_SHIFT
    derive_fast.WINDOW_SHIFT = default if shift is None else shift
    try:
        fast = derive(copy.deepcopy(t), group=group, m_of=m_of)
    finally:
        derive_fast.WINDOW_SHIFT = default
    ref = derive(copy.deepcopy(t), group=group, m_of=m_of, method="reference")
    for name in ("p", "m", "sequential", "dominant_size", "file_set"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), (name, group, m_of, a, b)
    assert fast.file_sets == ref.file_sets


def make(rank: np.ndarray, start: np.ndarray, end: np.ndarray, file_id: np.ndarray, *, offset: np.ndarray | None = None,
         size: np.ndarray | None = None, nodes: np.ndarray | None = None, collective: np.ndarray | None = None,
         nprocs: int | None = None, files: list[str] | None = None) -> Trace:
    n = rank.shape[0]
    return Trace(rank=rank.astype(np.int32), op=np.where(np.arange(n) % 3, OP_READ, OP_WRITE).astype(np.uint8),
                 offset=np.zeros(n, np.int64) if offset is None else offset.astype(np.int64),
                 size=np.full(n, 4096, np.int64) if size is None else size.astype(np.int64),
                 start=start.astype(np.float64), end=end.astype(np.float64), file_id=file_id.astype(np.int32),
                 files=list(FILES if files is None else files), node_of_rank=nodes, collective=collective,
                 nprocs=nprocs)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(1, 120))
    n_ranks = draw(st.integers(1, 12))
    # coarse times make equal instants (shared starts/ends, touching requests) common
    grid = draw(st.sampled_from([1.0, 0.5, 0.25, 1e-3]))
    ints = st.integers(0, 40)
    start = np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.float64) * grid
    length = np.array(draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 8, 30, -1]), min_size=n, max_size=n)),
                      dtype=np.float64) * grid
    rank = np.array(draw(st.lists(st.integers(0, n_ranks - 1), min_size=n, max_size=n)))
    file_id = np.array(draw(st.lists(st.integers(0, len(FILES) - 1), min_size=n, max_size=n)))
    offset = np.array(draw(st.lists(st.sampled_from([0, 4096, 8192, 12288]), min_size=n, max_size=n)))
    size = np.array(draw(st.lists(st.sampled_from([0, 4096, 8192]), min_size=n, max_size=n)))
    nodes = None
    node_kind = draw(st.sampled_from(["none", "one", "each", "some", "partial"]))
    if node_kind == "one":
        nodes = np.zeros(n_ranks, np.int32)
    elif node_kind == "each":
        nodes = np.arange(n_ranks, dtype=np.int32)
    elif node_kind == "some":
        nodes = np.array(draw(st.lists(st.integers(0, 3), min_size=n_ranks, max_size=n_ranks)), dtype=np.int32)
    elif node_kind == "partial":  # a table shorter than the ranks, with a -1: those ranks get nodes of their own
        nodes = np.array(draw(st.lists(st.integers(-1, 2), min_size=1, max_size=n_ranks)), dtype=np.int32)
    collective = None
    if draw(st.booleans()):
        collective = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    nprocs = draw(st.sampled_from([None, n_ranks, 64]))
    return make(rank, start, start + length, file_id, offset=offset, size=size, nodes=nodes, collective=collective,
                nprocs=nprocs)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from(SETTINGS), st.sampled_from([None, 0, 2]))
def test_fast_path_equals_reference(t: Trace, setting: tuple[str, str], shift: int | None) -> None:
    """Also with windows of one and of about four requests: every window boundary case in small traces."""
    assert_same(t, *setting, shift)


@pytest.mark.parametrize(("group", "m_of"), SETTINGS)
@pytest.mark.parametrize("per_node", [8, 16, 40])
def test_many_ranks_nodes_and_long_requests(group: str, m_of: str, per_node: int) -> None:
    """Bulk-synchronous phases on 200 ranks with a few requests spanning many others'; 8 and 16 ranks per
    node take m's 16-lane vector count, 40 its lane loop."""
    rng = np.random.default_rng(7)
    n, ranks = 20_000, 200
    rank = rng.integers(0, ranks, n)
    start = np.round(rng.random(n) * 50, 3)
    dur = rng.gamma(2.0, 0.05, n)
    long = rng.random(n) < 0.01
    dur[long] *= 300  # the long overlapping requests the reference's gap correction exists for
    dur[rng.random(n) < 0.05] = 0.0
    t = make(rank, start, start + np.round(dur, 3), rng.integers(0, len(FILES), n),
             offset=rng.integers(0, 4, n) * 4096, size=rng.choice([4096, 65536], n),
             nodes=(np.arange(ranks) // per_node).astype(np.int32), collective=rng.random(n) < 0.02, nprocs=ranks)
    assert_same(t, group, m_of)


def test_one_request_spanning_everything_and_identical_instants() -> None:
    k = 400
    rank = np.r_[0, np.arange(1, k + 1) % 7 + 1]
    start = np.r_[0.0, np.arange(k) // 3 * 1.0]  # triples share start instants; back to back
    end = np.r_[1e6, start[1:] + 1.0]
    t = make(rank, start, end, np.zeros(k + 1, int), nodes=np.array([0, 0, 1, 1, 2, 2, 3, 3], np.int32))
    for group, m_of in SETTINGS:
        assert_same(t, group, m_of)


def test_zero_length_requests_at_shared_instants() -> None:
    start = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0])
    end = np.array([0.0, 1.0, 1.0, 2.0, 0.5, 2.0, 3.0, 3.0])
    rank = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    for nodes in (None, np.array([0, 0, 1, 1], np.int32)):
        t = make(rank, start, end, np.zeros(8, int), nodes=nodes)
        for group, m_of in SETTINGS:
            assert_same(t, group, m_of)


def test_unusual_inputs_fall_back_to_the_reference() -> None:
    """Non-finite times: the fast path hands them to the reference, so both agree."""
    start = np.array([0.0, np.inf, 1.0, np.nan])
    t = make(np.array([0, 1, 2, 3]), start, start + 1, np.zeros(4, int))
    fast = derive(copy.deepcopy(t))
    ref = derive(copy.deepcopy(t), method="reference")
    assert np.array_equal(fast.p, ref.p) and np.array_equal(fast.m, ref.m)  # type: ignore[arg-type]


def test_shim_like_order_and_many_files() -> None:
    """Per-rank blocks in call order (as the shim writes them), one file per rank plus a shared one."""
    rng = np.random.default_rng(3)
    ranks, per = 64, 150
    rank = np.repeat(np.arange(ranks), per)
    k = np.tile(np.arange(per), ranks)
    start = k * 1.0 + rng.random(ranks * per) * 0.3
    files = ["/s/shared"] + [f"/s/out/part.{r}" for r in range(ranks)]
    fid = np.where(rng.random(ranks * per) < 0.5, 0, rank + 1)
    size = rng.choice([4096, 65536], ranks * per)
    t = make(rank, start, start + rng.gamma(4, 0.25, ranks * per), fid, offset=k * size, size=size,
             nodes=(np.arange(ranks) // 4).astype(np.int32), files=files)
    for group, m_of in SETTINGS:
        assert_same(t, group, m_of)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), max_size=300))
def test_stable_argsort_matches_numpy(values: list[float]) -> None:
    v = np.array(values, dtype=np.float64)
    assert np.array_equal(stable_argsort(v), np.argsort(v, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=300),
       st.sampled_from([1, 5000]), st.sampled_from([0, 3, 11]))
def test_start_order_is_a_stable_sort_with_each_windows_ends(values: list[float], copies: int, shift: int) -> None:
    """Starts in stable order carrying ends and pairs; each window's ends are the positions of the requests
    whose effective end falls there, and the windows' ends in window order, each window sorted stably, are
    the stable sort of the ends. Also past one window (copies=5000: buckets of equal values taking the merge
    sort)."""
    v = np.tile(np.array(values, dtype=np.float64), copies)
    end = v + np.where(np.arange(v.size) % 3 == 0, 0.0, 1.0)  # every third ends at its start
    with np.errstate(over="ignore"):  # the next float after the largest one is inf, as in the kernel
        eff = np.where(end > v, end, np.nextafter(v, np.inf))
    pair = (np.arange(v.size) % 7).astype(np.int32)
    ord_s, es, pair_s, sb, by_end, eb = start_order(v, end, pair, shift)
    expect = np.argsort(v, kind="stable")
    assert np.array_equal(ord_s, expect) and np.array_equal(pair_s, pair[expect])
    assert np.array_equal(es, eff[expect])
    assert sb[0] == eb[0] == 0 and sb[-1] == eb[-1] == v.size and np.all(np.diff(sb) >= 0)
    # Per window, vectorised (a Python loop over up to 1.5 M one-request windows took minutes): w[k] is
    # the window of by_end's k-th entry.
    w = np.repeat(np.arange(sb.size - 1), np.diff(eb))
    same = w[1:] == w[:-1]
    assert np.all(np.diff(by_end)[same] > 0)  # in position order
    assert np.all(by_end < sb[w + 1])  # a request ends in its start's window or a later one
    # each window sorted stably by effective end (ties keep position order), windows in window order
    ends = by_end[np.lexsort((np.arange(by_end.size), es[by_end], w))]
    assert np.array_equal(es[ends], np.sort(eff))


@pytest.mark.parametrize("m_of", ["issuing-node", "busiest-node"])
def test_skewed_starts_and_wide_nodes(m_of: str) -> None:
    """Half the requests start at one instant (one huge chunk and bucket: the merge-sort fallbacks), and
    80 ranks on a node: wider than the ordered sweep's 64 lanes, so m takes its own sweep."""
    rng = np.random.default_rng(11)
    n, ranks = 30_000, 160
    start = np.where(rng.random(n) < 0.5, 7.0, np.round(rng.random(n) * 20, 2))
    t = make(rng.integers(0, ranks, n), start, start + np.round(rng.gamma(2.0, 0.05, n), 2),
             rng.integers(0, len(FILES), n), nodes=(np.arange(ranks) // 80).astype(np.int32))
    assert_same(t, "directory", m_of)


@pytest.mark.parametrize("m_of", ["issuing-node", "busiest-node"])
def test_long_requests_over_every_range_count(m_of: str) -> None:
    """Short requests with gaps between them (each rank goes idle after each: one idle-log entry per
    request), overlapped by long requests spanning from a few entries to over 64 words (4096 entries) of
    that log: the sweeps' short count, the word loop and the block sums."""
    rng = np.random.default_rng(5)
    n, ranks = 24_000, 48
    rank = rng.integers(1, ranks, n)
    start = np.sort(rng.random(n)) * 1000.0
    end = start + rng.random(n) * 0.05
    spans = np.array([0.01, 0.2, 1.0, 5.0, 30.0, 200.0, 600.0, 999.0])  # ~0.2 to ~24,000 entries
    at = rng.random(spans.size) * (1000.0 - spans)
    t = make(np.r_[rank, np.zeros(spans.size, int)], np.r_[start, at], np.r_[end, at + spans],
             np.zeros(n + spans.size, int), nodes=(np.arange(ranks) // 16).astype(np.int32))
    assert_same(t, "directory", m_of)


def test_range_counts_match_a_plain_count() -> None:
    """The sweeps' set-bit counts of [lo, hi) — the short form within 4 words, whole words up to 64, then
    64-word and 4096-word block sums — against numpy, for ranges of every length class."""
    rng = np.random.default_rng(2)
    n_words = 3 * 4096 + 100
    words = rng.integers(0, 2**63, n_words, dtype=np.int64).astype(np.uint64) ^ rng.integers(0, 2, n_words).astype(
        np.uint64) << np.uint64(63)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little").astype(np.int64)
    c1 = np.add.reduceat(bits.reshape(-1, 64).sum(1), np.arange(0, n_words, 64)).astype(np.int32)
    c1 = np.r_[c1, 0].astype(np.int32)
    c2 = np.r_[np.add.reduceat(c1[:-1].astype(np.int64), np.arange(0, c1.size - 1, 64)), 0].astype(np.int32)
    padded = np.r_[words, np.zeros(PAD_WORDS, np.uint64)]
    top = n_words * 64
    cum = np.r_[0, np.cumsum(bits)]

    def check(lo: int, hi: int) -> None:
        nw = (hi >> 6) - (lo >> 6)
        if nw < 4:
            got = _bits_short(padded, lo, hi)
        else:
            got = _bits_words(padded, lo, hi) if nw <= 64 else _count_bits(padded, c1, c2, lo, hi)
        assert got == cum[hi] - cum[lo], (lo, hi)

    for lo in range(640, 640 + 64):  # every bit offset, every length up to 5 words: each short form
        for length in range(0, 321):
            check(lo, lo + length)
    for length in [20 * 64, 63 * 64 + 5, 64 * 64, 65 * 64 + 7, 129 * 64, 4096 * 64 + 3, 2 * 4096 * 64 + 100,
                   top - 1]:
        for lo in rng.integers(0, top - length, 5):
            check(int(lo), int(lo) + length)
    check(top - 3, top)  # the last word: the short form reads the padding after it


@pytest.mark.parametrize(("n_sizes", "n_files"), [(3, 6), (8, 6), (9, 6), (40, 6), (3, 5000)])
def test_dominant_sizes_with_few_and_many_sizes_and_files(n_sizes: int, n_files: int) -> None:
    """Up to 8 distinct sizes take the comparison path, more (or more files than the dense table may
    hold) the hash table; ties between equally common sizes go to the larger one on both."""
    rng = np.random.default_rng(n_sizes * 7 + n_files)
    n = 20_000
    sizes = rng.choice(np.arange(1, n_sizes + 1) * 4096, n)
    sizes[:2000] = 4096  # the first file's first sizes: 4096 and 8192 tie there
    sizes[1000:2000] = 8192
    fid = np.where(np.arange(n) < 2000, 0, rng.integers(0, n_files, n))
    start = np.arange(n, dtype=np.float64)
    t = make(rng.integers(0, 8, n), start, start + 0.5, fid, size=sizes,
             files=[f"/d/{i}" for i in range(n_files)])
    assert_same(t, "file", "issuing-node")


def test_dominant_sizes_with_cache_collisions_and_any_int64() -> None:
    """group_modes' cache of sizes seen maps values by a hash to 64 entries: values sharing an entry evict
    each other, and -1 (a uint64 size past 2^63 read as int64) or 0 are sizes like any other."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    cands = np.arange(1, 5000, dtype=np.uint64) * np.uint64(4096)
    slots = (cands * golden) >> np.uint64(58)
    first = cands[slots == slots[0]][:3].astype(np.int64)  # three sizes sharing one entry
    assert first.size == 3
    rng = np.random.default_rng(4)
    n = 6000
    sizes = rng.choice(np.r_[first, -1, 0], n)
    start = np.arange(n, dtype=np.float64)
    t = make(rng.integers(0, 8, n), start, start + 0.5, rng.integers(0, 3, n), size=sizes,
             files=["/d/0", "/d/1", "/d/2"])
    assert_same(t, "file", "issuing-node")


def test_unknown_method_is_an_error() -> None:
    from pfslayout.errors import InputError

    with pytest.raises(InputError, match="unknown derive method"):
        derive(make(np.array([0]), np.array([0.0]), np.array([1.0]), np.array([0])), method="quick")


def test_numba_not_imported_by_the_trace_package() -> None:
    """The operator imports ``pfslayout.traces`` (and ``derive`` through the planner) and must not load numba
    (its JIT costs ~100 MB): ``derive`` imports ``derive_fast`` only when it runs, and the kernels' package
    imports none of its modules."""
    import os
    import subprocess
    import sys

    code = ("import sys, pfslayout.traces, pfslayout.traces.derive, pfslayout.traces.derive_kernels; "
            "print('numba' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    assert out.strip() == "False"
