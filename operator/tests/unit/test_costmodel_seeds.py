"""Seeds 001, 002 and 004 reproduced: storage-only model, Fig. 2 makespan 4 vs 8, Fig. 3 24t vs 18t,
NIO/SIO/HIO Eqs. (4)-(9)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pfslayout.costmodel import placement, shuffle, storage_only
from pfslayout.errors import InputError

# --- 001 ---------------------------------------------------------------------------------------------

def test_001_formulas() -> None:
    a, b = 0.01, 0.001
    assert storage_only.storage_only_cost("1-DH", 4, 8, 800, a, b) == pytest.approx(4 * (a + 100 * b))
    assert storage_only.storage_only_cost("1-DV", 17, 8, 800, a, b) == pytest.approx(3 * (a + 800 * b))
    assert storage_only.storage_only_cost("2-D", 4, 8, 800, a, b) == pytest.approx(a + 4 * 800 * b / 8)
    assert storage_only.storage_only_cost("2-D", 12, 8, 800, a, b, g=4) == pytest.approx(3 * (a + 400 * b))


def test_001_1dv_beats_1dh_when_p_at_least_n() -> None:
    # 001 §3: 1-DV is better than 1-DH when p >= n (startup counted once per server, not p times)
    for p in (8, 16, 64):
        dv = storage_only.storage_only_cost("1-DV", p, 8, 1 << 20, 1e-3, 1e-8)
        dh = storage_only.storage_only_cost("1-DH", p, 8, 1 << 20, 1e-3, 1e-8)
        assert dv < dh


def test_001_2d_needs_p_below_n_without_g() -> None:
    with pytest.raises(InputError, match=r"^g: "):
        storage_only.storage_only_cost("2-D", 8, 8, 1, 1.0, 1.0)


# --- 002 ---------------------------------------------------------------------------------------------

FIG2: dict[str, Any] = {"S": [1.0] * 4, "B": [1 / 8, 1 / 2, 1.0, 1.0], "NB": 0.5, "owner": [0, 1, 2, 3]}


def test_002_fig2_cost_rows() -> None:
    T = placement.cost_matrix(FIG2["S"], FIG2["B"], FIG2["NB"], FIG2["owner"])
    assert T.tolist() == [[8, 4, 3, 3], [10, 2, 3, 3], [10, 4, 1, 3], [10, 4, 3, 1]]  # docs/seeds.md §2.10


def test_002_fig2_makespan_4_vs_8() -> None:
    local = placement.local_placement(FIG2["S"], FIG2["B"], FIG2["owner"])
    greedy = placement.coarse_balance(FIG2["S"], FIG2["B"], FIG2["NB"], FIG2["owner"])
    assert local.makespan == 8
    assert greedy.makespan == 4
    assert greedy.assignment == [2, 1, 3, 3]
    assert 0 not in greedy.assignment  # D0 receives nothing, as in the paper


def test_002_ilp_objective_agrees_for_single_accessor_chunks() -> None:
    A = np.eye(4)
    C1, C2 = placement.ilp_costs(np.ones(4), np.array(FIG2["B"]), 0.5, A)
    assert placement.ilp_makespan(np.eye(4), C1, C2) == 8.0  # everything local: D0 alone is 8


def test_002_fine_split_is_the_root_of_eq1() -> None:
    Si, Bi, Sj, Bj, NB = 10.0, 3.0, 50.0, 2.0, 7.0
    s = placement.fine_split(Si, Bi, Sj, Bj, NB)
    assert (Sj - s) / Bj == pytest.approx((Si + s) / Bi + s / NB)


def test_002_fine_balance_equalises_time() -> None:
    loads = placement.fine_balance([100.0, 0.0, 0.0], [1.0, 2.0, 4.0], np.inf)
    assert loads.sum() == pytest.approx(100.0)
    assert loads / np.array([1.0, 2.0, 4.0]) == pytest.approx([100 / 7] * 3, rel=1e-6)


def test_002_strip_sizes_follow_bandwidth() -> None:
    sizes = placement.strip_sizes([1.0, 2.0, 1.0, 4.0], 8 * 65536)
    assert sum(sizes) == 8 * 65536
    assert all(s % 4096 == 0 and s > 0 for s in sizes)
    assert sizes[3] > sizes[1] > sizes[0] == sizes[2]


def test_002_bad_bandwidth() -> None:
    with pytest.raises(InputError, match=r"^B: "):
        placement.cost_matrix([1.0], [0.0], 1.0, [0])


# --- 004 ---------------------------------------------------------------------------------------------

def test_004_fig3_24t_vs_18t() -> None:
    ex = shuffle.fig3_example(t=1.0)
    assert ex["fifo"] == 24.0
    assert ex["hio"] == 18.0
    order = ex["hio_order"]
    assert isinstance(order, list) and order[-1] == "p4"
    assert ex["p4_max_delay"] == 12.0


def test_004_eq1_max_not_sum() -> None:
    assert shuffle.shuffle_cost([10, 40], [30], B_a=10.0, B_e=5.0, gamma=0.5) == pytest.approx(6.5)


def test_004_ad_and_rad() -> None:
    assert shuffle.acceptable_delay([3.0, 5.0, 1.0]) == [2.0, 0.0, 4.0]
    assert shuffle.relative_acceptable_delay([3.0, 5.0, 1.0]) == [1, 0, 2]


def test_004_nio_sio_hio_m6_n6() -> None:
    assert shuffle.nio(6, 6) == pytest.approx(5.5603, abs=5e-5)
    assert shuffle.sio(6, 6) == 3.5
    assert shuffle.hio_best(6, 6) == 1.0
    assert shuffle.hio_worst(6, 6) == shuffle.sio(6, 6)
    assert shuffle.nio_by_definition(6, 6) == pytest.approx(shuffle.nio(6, 6), rel=1e-15)
    assert shuffle.simulate_nio(6, 6) == pytest.approx(5.5603, abs=0.05)


@pytest.mark.parametrize(("m", "n"), [(2, 1), (3, 4), (6, 6), (10, 16)])
def test_004_gains(m: int, n: int) -> None:
    assert shuffle.hio_gain(m, n) == pytest.approx((m - 1) / 2)
    closed = (m - 1) / 2 - sum(x**n for x in range(1, m)) / m**n
    assert shuffle.sio_gain(m, n) == pytest.approx(closed)
    assert shuffle.sio_gain(m, 200) == pytest.approx((m - 1) / 2, rel=1e-6)  # n → ∞ limit


def test_004_low_shuffle_window_sorts_by_app() -> None:
    w = [shuffle.Request(app=2, read=1.0, shuffle=0.0), shuffle.Request(app=1, read=1.0, shuffle=0.0)]
    assert [r.app for r in shuffle.hio_order(w)] == [1, 2]


def test_004_intra_classification() -> None:
    assert shuffle.is_intra_printed(0, 4, 4) and not shuffle.is_intra_printed(0, 5, 4)
    assert shuffle.is_intra(0, 1, [0, 0, 1]) and not shuffle.is_intra(0, 2, [0, 0, 1])


def test_002_column_update_adds_each_chunk_once() -> None:
    # three unit chunks, one disk: the third waits for two, so the makespan is 3 (not 1 + 1 + 2)
    one = placement.coarse_balance([1.0, 1.0, 1.0], [1.0], np.inf, [-1, -1, -1])
    assert one.makespan == 3.0 and one.loads == [3.0]
    # speeds 2:1 → twice as many chunks on the fast disk
    two = placement.coarse_balance(np.ones(9), [2.0, 1.0], np.inf, np.full(9, -1))
    assert np.bincount(two.assignment).tolist() == [6, 3] and two.makespan == 3.0
