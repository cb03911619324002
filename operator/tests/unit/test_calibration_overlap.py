"""Issue 33: network and storage overlap. With ``CostParams.overlap`` a request takes the larger of its network
side (T_e + T_x) and its storage side (T_s + T_rw) instead of the seeds' sum (docs/cost-model.md "Overlapped
network and storage"). The fit keeps that form only when it explains the measurements markedly better than
the sum; the planner's paths cost it the same way request by request."""

from __future__ import annotations

import numpy as np
import pytest

from pfslayout.calibration import design_grid, fit, parse_probe, simulate_probe
from pfslayout.calibration.design import CellConfig, identifiability, model_times
from pfslayout.calibration.fit import OVERLAP_GAIN
from pfslayout.calibration.grid import GridCell, ProbeGrid
from pfslayout.costmodel import CostParams, cost
from pfslayout.costmodel.fast import group_requests, layout_totals, layout_totals_many, per_request_totals
from pfslayout.kinds.costcalibration.status import fit_block, params_block
from pfslayout.shimconfig import ShimParams

MIB = 1 << 20
# network ~ storage in size, so cells fall on both sides of the max
SUMMED = CostParams(e=1.0e-4, v=1.0 / (150 * MIB), alpha_seq=5.0e-5, alpha_rand=2.0e-4, beta=1.0 / (25 * MIB))
OVERLAPPED = SUMMED.model_copy(update={"overlap": True})


@pytest.mark.parametrize(("layout", "g"), [("1-DV", None), ("1-DH", None), ("2-D", 2)])
def test_a_request_takes_the_larger_side(layout: str, g: int | None) -> None:
    for s in (4096, 65536, 4 * MIB):
        summed, over = (cost(layout, 4, 8, 2, s, g, random=True, params=p) for p in (SUMMED, OVERLAPPED))
        assert float(over.T_e) == float(summed.T_e) and float(over.T_rw) == float(summed.T_rw)  # the terms stay
        assert float(over.total) == pytest.approx(max(float(over.network), float(over.storage)))
        assert float(over.total) < float(summed.total)


def test_the_long_array_path_and_the_planner_paths_agree() -> None:
    rng = np.random.default_rng(7)
    n = 1 << 15  # long enough for table.cost's grouped path
    p = rng.integers(1, 9, n)
    m = np.minimum(p, rng.integers(1, 4, n))
    rnd = rng.random(n) < 0.5
    for sizes in ([65536.0], [4096.0, 4 * MIB]):
        s = rng.choice(sizes, n)
        for layout, g in (("1-DV", None), ("1-DH", None), ("2-D", 4)):
            whole = cost(layout, p, 8, m, s, g, random=rnd, params=OVERLAPPED)
            short = cost(layout, p[:200], 8, m[:200], s[:200], g, random=rnd[:200], params=OVERLAPPED)
            np.testing.assert_allclose(whole.total[:200], short.total, rtol=1e-12)
            np.testing.assert_allclose(whole.total, np.maximum(whole.network, whole.storage), rtol=1e-12)
            keyed = group_requests(p, m, s, rnd, with_key=True)
            np.testing.assert_allclose(per_request_totals(layout, keyed, s, 8, g, OVERLAPPED), whole.total,
                                       rtol=1e-12)
            grouped = group_requests(p, m, s, rnd)
            t = layout_totals(layout, grouped, 8, g, OVERLAPPED)
            if len(sizes) == 1:  # one size per group: exact
                assert t.total == pytest.approx(float(whole.total.sum()), rel=1e-9)
            else:  # a group's larger side of its sums: never above the requests' own
                assert t.total <= float(whole.total.sum()) * (1 + 1e-12)
            assert t.T_e == pytest.approx(float(whole.T_e.sum()), rel=1e-9)  # the four sums are the seeds'
            many = layout_totals_many(layout, grouped, np.arange(len(grouped)), grouped.count, grouped.bytes,
                                      [len(grouped)], 8, g, OVERLAPPED)
            assert many[0].total == pytest.approx(t.total, rel=1e-12)


def test_the_fit_finds_overlap_and_recovers_the_parameters() -> None:
    grid = design_grid(4, 2, 2)
    result = fit(parse_probe(simulate_probe(grid, OVERLAPPED, noise=0.02, seed=5), "overlap.json"))
    assert result.params.overlap is True
    assert "overlap" in result.overlap_note and "cells network-bound" in result.overlap_note
    bound = result.network_bound
    assert 0 < int(bound.sum()) < len(bound)  # both sides bound some cells: both are identified
    for name in ("e", "v", "beta"):
        assert getattr(result.params, name) == pytest.approx(getattr(SUMMED, name), rel=0.2), name
    assert result.r2 is not None and result.r2 > 0.99
    # what the operator publishes carries it: status.params, status.fit, the --params document, the shim
    assert params_block(result)["overlap"] is True
    assert fit_block(result)["overlap"] == result.overlap_note
    doc = result.to_dict()
    assert CostParams.model_validate(doc).overlap is True and doc["fit"]["overlap"] == result.overlap_note
    assert ShimParams.of(result.params).overlap is True
    np.testing.assert_allclose(result.predicted, model_times(result.cells, 4, result.params), rtol=1e-12)


def test_summed_measurements_keep_the_sum() -> None:
    grid = design_grid(4, 2, 2)
    result = fit(parse_probe(simulate_probe(grid, SUMMED, noise=0.02, seed=5), "summed.json"))
    assert not result.params.overlap
    assert result.overlap_note.startswith("network and storage add up")
    assert "above the sum's" in result.overlap_note  # the max explains summed times far worse
    assert OVERLAP_GAIN >= 0  # a tie keeps the seeds' sum
    assert "overlap" not in params_block(result)
    assert result.network_bound.all()  # in the sum every cell counts as network-bound


def test_one_server_keeps_the_sum_even_when_times_overlap() -> None:
    # One server (a local-directory probe): the sum's grid confounds e with α and v with β, so the side that
    # bounds a cell would be decided by where the noise puts the max's kink — the fit must not try that form
    # (a real POSIX probe took it in 12 of 16 runs and reported e and v identified from the kink alone).
    cells = [GridCell("1-DV", None, op, pattern, p, p, size, 16, 5)
             for p in (1, 2) for size in (4096, 65536, MIB) for pattern in ("sequential", "random")
             for op in ("write", "read")]
    grid = ProbeGrid(servers=1, nodes=1, ranks_per_node=2, cells=cells, design=identifiability(np.eye(5)))
    result = fit(parse_probe(simulate_probe(grid, OVERLAPPED, noise=0.02, seed=5), "one-server.json"))
    assert not result.params.overlap
    assert set(result.design.confounded) == {("e", "alpha_seq", "alpha_rand"), ("v", "beta")}
    assert result.overlap_note == ("network and storage add up (the grid cannot tell the two sides apart, it "
                                   "determines only e+alpha_seq+alpha_rand and v+beta: probe with at least 2 "
                                   "servers)")


def test_the_printed_variant_keeps_the_sum() -> None:
    grid = design_grid(4, 2, 2)
    result = fit(parse_probe(simulate_probe(grid, OVERLAPPED, noise=0.02, seed=5), "printed.json"),
                 variant="printed")
    assert not result.params.overlap and "printed" in result.overlap_note


def test_overlap_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="overlap"):
        CostParams.model_validate(SUMMED.model_dump() | {"overlap": "yes"})
    cell = CellConfig("1-DH", None, "read", "random", 2, 2, MIB, 4)
    assert model_times([cell], 4, OVERLAPPED)[0] < model_times([cell], 4, SUMMED)[0]
