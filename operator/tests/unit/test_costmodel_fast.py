"""Grouped trace totals and chunked per-request costs equal the direct per-request model."""

from __future__ import annotations

import numpy as np
import pytest

from pfslayout.costmodel import SEED_INFINIBAND, cost
from pfslayout.costmodel.fast import _CHUNK, group_requests, layout_totals, per_request_totals


def _trace(rng: np.random.Generator, n: int, pmax: int) -> tuple[np.ndarray, ...]:
    p = rng.integers(1, pmax + 1, n)
    m = np.minimum(p, rng.integers(1, 9, n))
    s = rng.integers(0, 1 << 24, n).astype(np.float64)
    r = rng.random(n) < 0.3
    return p, m, s, r


@pytest.mark.parametrize("pmax", [64, 1 << 20])  # dense key table, and the np.unique fallback
@pytest.mark.parametrize("variant", ["printed", "corrected"])
def test_totals_and_per_request_match_direct(pmax: int, variant: str) -> None:
    rng = np.random.default_rng(7)
    p, m, s, r = _trace(rng, 3 * _CHUNK + 17, pmax)
    groups = group_requests(p, m, s, r, with_key=True)
    assert groups.count.sum() == p.size and groups.bytes.sum() == pytest.approx(s.sum())
    for layout, g in (("1-DV", None), ("1-DH", None), ("2-D", 4), ("2-D", 3)):
        direct = cost(layout, p, 12, m, s, None if g is None else np.full(p.size, g), random=r,
                      params=SEED_INFINIBAND, variant=variant)
        tot = layout_totals(layout, groups, 12, g, SEED_INFINIBAND, variant)
        assert tot.T_e == pytest.approx(direct.T_e.sum(), rel=1e-9)
        assert tot.T_x == pytest.approx(direct.T_x.sum(), rel=1e-9)
        assert tot.T_s == pytest.approx(direct.T_s.sum(), rel=1e-9)
        assert tot.T_rw == pytest.approx(direct.T_rw.sum(), rel=1e-9)
        per = per_request_totals(layout, groups, s, 12, g, SEED_INFINIBAND, variant)
        np.testing.assert_allclose(per, direct.total, rtol=1e-12)


def test_empty_groups() -> None:
    g = group_requests(np.zeros(0, int), np.zeros(0, int), np.zeros(0), False)
    assert len(g) == 0
    assert layout_totals("1-DV", g, 4, None, SEED_INFINIBAND).total == 0.0


@pytest.mark.parametrize("pmax", [64, 1 << 20])
def test_group_index_maps_requests_to_their_group(pmax: int) -> None:
    rng = np.random.default_rng(3)
    p, m, s, r = _trace(rng, 5000, pmax)
    g = group_requests(p, m, s, r, with_key=True)
    idx = g.index()
    assert np.array_equal(g.p[idx], p) and np.array_equal(g.m[idx], m) and np.array_equal(g.random[idx], r)
    assert np.array_equal(np.bincount(idx, minlength=len(g)), g.count)


@pytest.mark.parametrize("variant", ["printed", "corrected"])
def test_cost_long_arrays_take_the_grouped_path_with_identical_results(monkeypatch: pytest.MonkeyPatch,
                                                                       variant: str) -> None:
    from pfslayout.costmodel import table

    rng = np.random.default_rng(11)
    p, m, s, r = _trace(rng, table._FAST_MIN + 5, 300)
    for layout, g in (("1-DV", None), ("1-DH", None), ("2-D", 5)):
        fast = cost(layout, p, 20, m, s, g, random=r, params=SEED_INFINIBAND, variant=variant)
        monkeypatch.setattr(table, "_FAST_MIN", 1 << 62)
        direct = cost(layout, p, 20, m, s, g, random=r, params=SEED_INFINIBAND, variant=variant)
        monkeypatch.undo()
        for term in ("T_e", "T_x", "T_s", "T_rw", "total"):
            np.testing.assert_allclose(getattr(fast, term), getattr(direct, term), rtol=1e-12, atol=0)
