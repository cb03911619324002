"""derive: p, m, sequential and dominant size — hand-worked on the fixture, and against a brute-force
reference on random traces (including long requests that span several of another rank's requests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pfslayout.errors import InputError
from pfslayout.traces import (
    OP_READ,
    Trace,
    derive,
    dominant_sizes,
    load_trace,
    read_csv_trace,
)

DATA = Path(__file__).resolve().parents[1] / "data"


def test_fixture_by_hand() -> None:
    t = derive(read_csv_trace(DATA / "trace-small.csv"))
    # phase 1: all four ranks write together; phase 2: ranks 0 and 2 overlap; phase 3: rank 1's long read
    # spans both of rank 3's short reads — rank 3 counts once, not twice
    assert t.p.tolist() == [4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2]  # type: ignore[union-attr]
    # two ranks per node in phase 1; afterwards each node has one busy rank
    assert t.m.tolist() == [2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]  # type: ignore[union-attr]
    # first request sequential only at offset 0; then offset == previous end of that rank on that file
    assert t.sequential.tolist() == [True, False, False, False, True, True, True, True, False, False, False]  # type: ignore[union-attr]
    assert t.dominant_size.tolist() == [65536, 65536, 1 << 20]  # type: ignore[union-attr]
    assert t.file_sets == ["/data/run"] and t.file_set.tolist() == [0, 0, 0]  # type: ignore[union-attr]


def test_grouping_by_file_separates_per_process_files() -> None:
    t = derive(read_csv_trace(DATA / "trace-small.csv"), group="file")
    assert t.p.tolist() == [4, 4, 4, 4, 1, 1, 1, 1, 2, 2, 2]  # type: ignore[union-attr]
    assert len(t.file_sets) == 3
    with pytest.raises(InputError, match="unknown file-set grouping"):
        derive(read_csv_trace(DATA / "trace-small.csv"), group="node")


def test_shim_and_csv_fixtures_derive_the_same() -> None:
    a = load_trace(DATA / "trace-small.csv")
    b = load_trace(DATA / "shim-small")

    def key(t: Trace) -> list[tuple]:
        return sorted(zip(t.rank.tolist(), t.start.round(6).tolist(), t.p.tolist(), t.m.tolist(),  # type: ignore[union-attr]
                          t.sequential.tolist()))  # type: ignore[union-attr]

    assert key(a) == key(b)


def brute(t: Trace, group: str, busiest: bool = False) -> tuple[np.ndarray, np.ndarray]:
    import os

    names = [os.path.dirname(f) if group == "directory" else f for f in t.files]
    s = t.start
    e = np.where(t.end > t.start, t.end, t.start)
    p, m = [], []
    for i in range(len(t)):
        ranks = set()
        for j in range(len(t)):
            if names[t.file_id[j]] != names[t.file_id[i]]:
                continue
            if t.end[i] == t.start[i]:  # instant: ranks in flight then
                hit = s[j] <= s[i] < e[j] or (s[j] == e[j] == s[i])
            elif t.end[j] == t.start[j]:
                hit = s[i] <= s[j] < e[i]
            else:
                hit = s[j] < e[i] and e[j] > s[i]
            if hit:
                ranks.add(int(t.rank[j]))
        p.append(len(ranks))
        nodes = t.node_of_rank
        assert nodes is not None, "derived traces know each rank's node"
        per_node = [sum(1 for r in ranks if nodes[r] == k) for k in set(nodes.tolist())]
        node = nodes[t.rank[i]]
        m.append(max(per_node) if busiest else sum(1 for r in ranks if nodes[r] == node))
    return np.array(p), np.array(m)


@pytest.mark.parametrize("seed", range(12))
def test_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    ranks = int(rng.integers(1, 9))
    start = rng.integers(0, 40, n).astype(float) / 4
    duration = rng.choice([0.0, 0.25, 0.5, 1.0, 6.0], size=n, p=[0.1, 0.3, 0.3, 0.2, 0.1])
    t = Trace(rank=rng.integers(0, ranks, n).astype(np.int32), op=np.full(n, OP_READ, np.uint8),
              offset=rng.integers(0, 4, n).astype(np.int64) * 10, size=np.full(n, 10, np.int64), start=start,
              end=start + duration, file_id=rng.integers(0, 3, n).astype(np.int32),
              files=["/x/a", "/x/b", "/y/c"], node_of_rank=(np.arange(ranks) % 3).astype(np.int32))
    for group in ("directory", "file"):
        for m_of in ("issuing-node", "busiest-node"):
            derive(t, group=group, m_of=m_of)
            p, m = brute(t, group, busiest=m_of == "busiest-node")
            assert t.p.tolist() == p.tolist(), group  # type: ignore[union-attr]
            assert t.m.tolist() == m.tolist(), (group, m_of)  # type: ignore[union-attr]


def test_collective_records_use_the_communicator() -> None:
    t = read_csv_trace(DATA / "trace-small.csv")
    t.collective = np.zeros(len(t), dtype=bool)
    t.collective[4] = True  # rank 0 alone-ish in phase 2, but collective over 16 ranks
    t.nprocs = 16
    derive(t)
    assert t.p[4] == 16 and t.m[4] == 2  # type: ignore[index]  # ranks 0 and 1 share node a
    assert t.p[5] == 2  # type: ignore[index]  # its independent neighbour is unchanged


def test_without_nodes_m_is_one() -> None:
    t = read_csv_trace(DATA / "trace-small.csv")
    t.node_of_rank = None
    derive(t)
    assert t.m.tolist() == [1] * len(t)  # type: ignore[union-attr]


def test_empty_trace_is_an_error() -> None:
    empty = Trace(rank=np.zeros(0, np.int32), op=np.zeros(0, np.uint8), offset=np.zeros(0, np.int64),
                  size=np.zeros(0, np.int64), start=np.zeros(0), end=np.zeros(0), file_id=np.zeros(0, np.int32))
    with pytest.raises(InputError, match="no I/O requests"):
        derive(empty)


def test_dominant_size_ties_go_to_the_larger_size() -> None:
    fid = np.array([0, 0, 0, 0, 1, 1, 1])
    size = np.array([4, 8, 4, 8, 2, 2, 9])
    assert dominant_sizes(fid, size, 3).tolist() == [8, 2, 0]


def test_ranks_without_a_node_get_their_own() -> None:
    t = read_csv_trace(DATA / "trace-small.csv")
    t.node_of_rank = np.array([0, 0, -1], dtype=np.int32)  # rank 2 unknown, rank 3 beyond the table
    derive(t)
    # phase 1: ranks 0, 1 share node 0; ranks 2 and 3 are each alone
    assert t.m.tolist()[:4] == [2, 2, 1, 1]  # type: ignore[union-attr]


@pytest.mark.parametrize("nodes", ["one", "each"])
def test_node_shortcuts_match_the_general_count(nodes: str) -> None:
    from pfslayout.traces import derive as derive_mod
    from pfslayout.traces.derive import _distinct_overlaps, _ticks

    t = read_csv_trace(DATA / "trace-small.csv")
    t.node_of_rank = np.zeros(4, np.int32) if nodes == "one" else np.arange(4, dtype=np.int32)
    derive_mod(t)
    s, e = _ticks(t.start, t.end)
    rank = t.rank.astype(np.int64)
    general = _distinct_overlaps(t.file_set[t.file_id].astype(np.int64) * 8 + t.node_of_rank[rank], rank, s, e)  # type: ignore[index]
    assert t.m.tolist() == general.tolist()  # type: ignore[union-attr]


def test_busiest_node_on_the_fixture() -> None:
    t = read_csv_trace(DATA / "trace-small.csv")
    t.node_of_rank = np.array([0, 1, 1, 1], dtype=np.int32)  # rank 0 alone on node 0
    issuing = derive(t).m.tolist()  # type: ignore[union-attr]
    busiest = derive(t, m_of="busiest-node").m.tolist()  # type: ignore[union-attr]
    # phase 1: rank 0's own node has only rank 0, the busiest node has ranks 1, 2, 3
    assert issuing[:4] == [1, 3, 3, 3] and busiest[:4] == [3, 3, 3, 3]
    with pytest.raises(InputError, match="unknown m definition"):
        derive(t, m_of="any")
