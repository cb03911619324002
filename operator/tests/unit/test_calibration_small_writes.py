"""Issue 33: a write split over two servers or more into pieces below OrangeFS's small-I/O limit (16 KiB) costs
``v_small_write`` per byte of all ranks' data on the network side (docs/cost-model.md "Small writes"). Reads
never; the fit keeps the term only where the grid and the measurements determine it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pfslayout.calibration import fit, parse_probe, simulate_probe
from pfslayout.calibration.design import CellConfig, columns, design_matrix, model_times
from pfslayout.calibration.profiles import profile_grid
from pfslayout.costmodel import CostParams, cost
from pfslayout.costmodel.fast import group_requests, layout_totals, per_request_totals
from pfslayout.kinds.costcalibration.status import fit_block, params_block
from pfstestkit.cli import run_wide

KIB, MIB = 1 << 10, 1 << 20
BASE = CostParams(e=8.0e-5, v=1.0e-8, alpha_seq=1.0e-5, alpha_rand=2.0e-5, beta=4.0e-8, overlap=True)
SMALL = BASE.model_copy(update={"v_small_write": 6.0e-9})


@pytest.mark.parametrize(("layout", "g", "size", "small"), [
    ("1-DH", None, 32 * KIB, True),    # 8 KiB pieces on 4 servers
    ("2-D", 2, 32 * KIB, False),       # 16 KiB pieces on 2: at the limit, a flow
    ("2-D", 2, 24 * KIB, True),        # 12 KiB pieces on 2
    ("1-DV", None, 8 * KIB, False),    # one server: bounded by its one link either way
    ("1-DH", None, 256 * KIB, False),  # 64 KiB pieces
])
def test_the_column_counts_the_bytes_of_small_split_writes(layout: str, g: int | None, size: int, small: bool) -> None:
    write = CellConfig(layout, g, "write", "sequential", 2, 2, size, 8)
    read = CellConfig(layout, g, "read", "sequential", 2, 2, size, 8)
    rows = design_matrix([write, read], 4, small=True)
    assert columns(small=True)[-1] == "v_small_write"
    assert rows[0, -1] == (8 * 2 * size if small else 0) and rows[1, -1] == 0  # reads never
    assert list(rows[0, :-1]) == list(design_matrix([write], 4)[0])  # the other columns are untouched
    times = model_times([write, read], 4, SMALL) - model_times([write, read], 4, BASE)
    assert times[1] == 0 and (times[0] > 0) == small


def test_a_read_does_not_carry_it_and_a_mix_scales_it() -> None:
    assert SMALL.for_op("read").v_small_write is None and SMALL.for_op("write").v_small_write == 6.0e-9
    assert SMALL.mixed(0.75).v_small_write == pytest.approx(0.25 * 6.0e-9)
    assert SMALL.mixed(1.0).v_small_write == 0.0
    with_, without = (cost("1-DH", 2, 4, 2, 32 * KIB, params=p) for p in (SMALL, BASE))
    assert float(with_.T_x - without.T_x) == pytest.approx(2 * 32 * KIB * 6.0e-9)
    assert float(with_.T_e) == float(without.T_e) and float(with_.T_rw) == float(without.T_rw)


def test_the_grouped_totals_match_the_requests() -> None:
    # one size per (p, m, random) group: the totals judged at each group's mean size are exact
    rng = np.random.default_rng(7)
    p = rng.choice([1, 2, 4], 3000)
    m = np.minimum(p, 2)
    size = np.where(p == 2, 32 * KIB, np.where(p == 4, 8 * KIB, MIB)).astype(float)
    random = np.zeros(3000, dtype=bool)
    groups = group_requests(p, m, size, random, with_key=True)
    for layout, g in (("1-DH", None), ("2-D", 2), ("1-DV", None)):
        each = cost(layout, p, 4, m, size, g, random=random, params=SMALL).total
        per = per_request_totals(layout, groups, size, 4, g, SMALL)
        np.testing.assert_allclose(per, each, rtol=1e-12)
        assert layout_totals(layout, groups, 4, g, SMALL).total == pytest.approx(float(each.sum()), rel=1e-12)


def test_the_standard_grid_and_the_fit_recover_it() -> None:
    grid = profile_grid("standard", 4, 1, 4)
    result = fit(parse_probe(simulate_probe(grid, SMALL, noise=0.02, seed=5), "small.json"))
    assert result.params.v_small_write == pytest.approx(6.0e-9, rel=0.15)
    assert result.determined["v_small_write"] and "v_small_write" in result.small_note
    assert result.params.overlap and result.overlap_note.startswith("network and storage overlap")  # kept
    assert params_block(result)["v_small_write"] == result.params.v_small_write  # status.params
    assert fit_block(result)["smallWrites"] == result.small_note  # status.fit.smallWrites
    assert CostParams.model_validate(result.to_dict()).v_small_write == result.params.v_small_write


def test_the_fit_leaves_it_out_where_writes_cost_no_more() -> None:
    grid = profile_grid("standard", 4, 1, 4)
    result = fit(parse_probe(simulate_probe(grid, BASE, noise=0.02, seed=5), "plain.json"))
    assert result.params.v_small_write is None and "not charged" in result.small_note


def test_a_grid_without_small_pieces_says_so() -> None:
    grid = profile_grid("standard", 2, 1, 2)  # 32 KiB on 2 servers: 16 KiB pieces, none below the limit
    result = fit(parse_probe(simulate_probe(grid, SMALL, noise=0.02, seed=5), "two.json"))
    assert result.params.v_small_write is None and "no cell writes pieces below" in result.small_note


def test_the_cli_table_shows_the_term_and_both_notes(tmp_path: Path) -> None:
    doc = tmp_path / "small.json"
    doc.write_text(json.dumps(simulate_probe(profile_grid("standard", 4, 1, 4), SMALL, noise=0.02, seed=5)))
    out = run_wide("calibrate", "--measurements", str(doc))
    assert "ns per byte of all ranks (small split writes)" in out
    assert "small writes: writes split into pieces below the small-I/O limit also cost v_small_write" in out
    assert "overlap: network and storage overlap" in out
