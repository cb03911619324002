"""Issue 13 items 3 and 4: the model costs a layout as it is realised (a request smaller than the strip
touches fewer servers), and the fit gives writes their own e and β when the measurements separate them."""

from __future__ import annotations

import pytest

from pfslayout.calibration import design_grid, fit, model_time, parse_probe, simulate_probe
from pfslayout.calibration.design import CellConfig, columns, design_matrix
from pfslayout.costmodel import CostParams, cost
from pfslayout.planner.classify import realised_as

MIB = 1 << 20
BASE = CostParams(e=2.0e-4, v=1.0 / (300 * MIB), alpha_seq=5.0e-5, alpha_rand=3.0e-4, beta=1.0 / (30 * MIB))


@pytest.mark.parametrize(("layout", "g", "n", "sharing", "size", "want"), [
    # 4 KiB over 4 servers: the strip floor is 4 KiB, so one server — 1-DV
    ("1-DH", None, 4, "file-per-process", 4096, ("1-DV", None)),
    # 16 KiB over 8 servers: 4 KiB strips, 4 servers — 2-D with g = 8/4
    ("1-DH", None, 8, "file-per-process", 16384, ("2-D", 2)),
    # 8 KiB on a 2-D g=2 file of 4 datafiles (n=8): 4 KiB strips, 2 servers — g = 8/2
    ("2-D", 2, 8, "file-per-process", 8192, ("2-D", 4)),
    ("2-D", 2, 8, "shared", 4096, ("1-DV", None)),  # strip (2/8)·4K → floor 4 KiB: one server
    # large requests touch every server of their layout: unchanged
    ("1-DH", None, 4, "file-per-process", 4 * MIB, ("1-DH", None)),  # 64 KiB strips, all 4 servers
    ("1-DH", None, 4, "file-per-process", 16384, ("1-DH", None)),  # 4 KiB strips, all 4
    ("2-D", 2, 4, "file-per-process", 256 * 1024, ("2-D", 2)),
    ("1-DV", None, 4, "file-per-process", 4096, ("1-DV", None)),
])
def test_a_layout_is_costed_as_realised(layout: str, g: int | None, n: int, sharing: str, size: int,
                                        want: tuple[str, int | None]) -> None:
    assert realised_as(layout, g, n, sharing, size) == want


def test_model_time_follows_the_realised_layout_and_the_operation() -> None:
    cell = CellConfig("1-DH", None, "read", "sequential", 1, 1, 4096, 10)
    as_1dv = cost("1-DV", 1, 4, 1, 4096, None, random=False, params=BASE).total
    assert model_time(cell, 4, BASE) == pytest.approx(10 * float(as_1dv))
    per_op = BASE.model_copy(update={"e_write": 3.0e-4, "beta_write": 1.0 / (20 * MIB)})
    write = CellConfig("1-DH", None, "write", "sequential", 1, 1, 4096, 10)
    want = cost("1-DV", 1, 4, 1, 4096, None, random=False, params=per_op.for_op("write")).total
    assert model_time(write, 4, per_op) == pytest.approx(10 * float(want))
    assert model_time(cell, 4, per_op) == pytest.approx(10 * float(as_1dv))  # reads keep e and β


def test_split_columns_move_only_write_cells() -> None:
    cells = [CellConfig("1-DV", None, op, "random", 2, 2, 65536, 4) for op in ("read", "write")]
    five = design_matrix(cells, 4)
    split = design_matrix(cells, 4, split=("e", "beta"))
    assert columns(("e", "beta")) == ("e", "v", "alpha_seq", "alpha_rand", "beta", "e_write", "beta_write")
    assert list(split[0]) == [*five[0], 0.0, 0.0]  # a read: e and β columns as before
    assert split[1][0] == 0.0 and split[1][4] == 0.0  # a write: its e and β moved to the write columns
    assert split[1][5] == five[1][0] and split[1][6] == five[1][4]
    with pytest.raises(ValueError, match="split"):
        columns(("v",))


def test_fit_separates_writes_that_cost_more() -> None:
    truth = BASE.model_copy(update={"e_write": 1.5 * BASE.e, "beta_write": 1.3 * BASE.beta})
    grid = design_grid(4, 2, 4)
    result = fit(parse_probe(simulate_probe(grid, truth, noise=0.02, seed=5), "per-op.json"))
    assert result.params.per_op and result.columns[-2:] == ("e_write", "beta_write")
    for name in ("e", "e_write", "beta", "beta_write"):
        assert getattr(result.params, name) == pytest.approx(getattr(truth, name), rel=0.10), name
    doc = result.to_dict()
    assert doc["e_write"] == result.params.e_write and "writes have their own e and beta" in doc["fit"]["per_operation"]
    assert doc["fit"]["rank"] == 7


def test_fit_keeps_five_parameters_when_the_operations_cost_alike() -> None:
    grid = design_grid(4, 2, 4)
    result = fit(parse_probe(simulate_probe(grid, BASE, noise=0.02, seed=5), "same.json"))
    assert not result.params.per_op and result.columns == ("e", "v", "alpha_seq", "alpha_rand", "beta")
    assert "standard errors of the read value" in result.split_note


def test_fit_of_one_operation_has_nothing_to_split() -> None:
    grid = design_grid(4, 2, 4, ops=("read",))
    result = fit(parse_probe(simulate_probe(grid, BASE, noise=0.02, seed=5), "reads.json"))
    assert not result.params.per_op and "only read" in result.split_note


def test_per_server_overrides_replace_both_operations() -> None:
    p = CostParams.model_validate({**BASE.scalars(), "e_write": 3e-4, "beta_write": 1e-7,
                                   "servers": [{"beta": 2e-8}, {}]})
    assert p.for_server(0).beta == 2e-8 and p.for_server(0).beta_write is None  # the server's β serves both
    assert p.for_server(0).e_write == 3e-4  # e not overridden: the global write value stays
    assert p.for_server(1).beta_write == 1e-7
    mixed = p.mixed(0.25)
    assert mixed.e == pytest.approx(0.25 * BASE.e + 0.75 * 3e-4) and not mixed.per_op
    with pytest.raises(Exception, match="op"):
        p.for_op("append")
