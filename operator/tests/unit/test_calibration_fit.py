"""The fit recovers known parameters from synthetic measurements (with noise), reports fit quality,
and warns about every parameter the measurements cannot identify."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from pfslayout.calibration import (
    Cell,
    GridCell,
    Measurements,
    design_grid,
    fit,
    model_time,
    parse_probe,
    simulate_probe,
)
from pfslayout.costmodel import SEED_ETHERNET, SEED_INFINIBAND, CostParams
from pfslayout.errors import InputError

MIB = 1 << 20
TRUE = CostParams(e=2.5e-4, v=1.0 / (300 * MIB), alpha_seq=8.0e-5, alpha_rand=5.0e-4, beta=1.0 / (180 * MIB))
NAMES = ("e", "v", "alpha_seq", "alpha_rand", "beta")


@pytest.mark.parametrize("truth", [TRUE, SEED_ETHERNET, SEED_INFINIBAND], ids=["custom", "ethernet", "infiniband"])
@pytest.mark.parametrize("platform", [(4, 2, 4), (8, 4, 4), (2, 1, 4)], ids=lambda p: "n{}x{}x{}".format(*p))
def test_recovers_parameters_from_noisy_probe(truth: CostParams, platform: tuple[int, int, int]) -> None:
    grid = design_grid(*platform)
    doc = simulate_probe(grid, truth, noise=0.03, seed=3)
    result = fit(parse_probe(doc, "synthetic.json"))
    # 3 % noise on a few hundred cells: every parameter within 10 % — 15 % on 2 servers, where a 4 KiB
    # request on 1-DH touches one server (its strip is 4 KiB) and so adds no row 1-DV does not have
    tolerance = 0.15 if platform[0] == 2 else 0.10
    for name in NAMES:
        got, want = getattr(result.params, name), getattr(truth, name)
        assert got == pytest.approx(want, rel=tolerance), name
        # and the reported standard error is honest: within 5 σ of the truth
        stderr = result.stderr[name]
        assert stderr is not None and abs(got - want) < 5 * stderr + 1e-15, name
    assert result.r2 is not None and result.r2 > 0.99
    assert result.median_relative_error < 0.05
    assert result.design.rank == 5 and result.warnings == []


def test_noise_free_measurements_are_recovered_exactly() -> None:
    grid = design_grid(4, 2, 4, max_configs=10)
    result = fit(parse_probe(simulate_probe(grid, TRUE, noise=0.0), "exact.json"))
    for name in NAMES:
        assert getattr(result.params, name) == pytest.approx(getattr(TRUE, name), rel=1e-6)
    assert result.r2 == pytest.approx(1.0, abs=1e-9)
    assert result.max_relative_error < 1e-6
    assert np.allclose(result.predicted, result.measured, rtol=1e-6)


def test_printed_variant_fits_its_own_data() -> None:
    grid = design_grid(4, 2, 4, variant="printed")
    doc = simulate_probe(grid, TRUE, noise=0.0, variant="printed")
    printed = fit(parse_probe(doc, "p.json"), variant="printed")
    assert printed.params.e == pytest.approx(TRUE.e, rel=1e-6)
    corrected = fit(parse_probe(doc, "p.json"), variant="corrected")
    assert corrected.max_relative_error > printed.max_relative_error  # the wrong model fits worse


def cells_from(grid_cells: Iterable[GridCell], servers: int, truth: CostParams) -> list[Cell]:
    return [Cell(c.layout, c.g, c.op, c.pattern, c.p, c.m, c.request_size, c.requests_per_rank,
                 model_time(c, servers, truth), source=f"cells[{i}]") for i, c in enumerate(grid_cells)]


def test_sequential_only_grid_warns_alpha_rand_unidentified() -> None:
    full = design_grid(4, 2, 4)
    seq = [c for c in full.cells if c.pattern == "sequential"]
    result = fit(Measurements(4, cells_from(seq, 4, TRUE), "test", "seq.json"))
    assert result.design.unused == ("alpha_rand",)
    assert any(w.startswith("alpha_rand: not identified") for w in result.warnings)
    assert result.to_dict()["fit"]["identified"]["alpha_rand"] is False
    assert result.params.e == pytest.approx(TRUE.e, rel=1e-6)  # the rest is still identified


def test_one_server_confounds_network_and_storage() -> None:
    # n = 1: every serial count is the server's, so e moves with α and v with β
    cells = [Cell("1-DV", None, "read", pat, p, p, s, 8, 0.0, source=f"c{i}")
             for i, (p, s, pat) in enumerate((p, s, pat) for p in (1, 2, 4) for s in (4096, MIB)
                                             for pat in ("sequential", "random"))]
    cells = [Cell(c.layout, c.g, c.op, c.pattern, c.p, c.m, c.request_size, c.requests_per_rank,
                  model_time(c, 1, TRUE), source=c.source) for c in cells]
    result = fit(Measurements(1, cells, "test"))
    groups = set(result.design.confounded)
    assert ("e", "alpha_seq", "alpha_rand") in groups and ("v", "beta") in groups
    assert len(result.warnings) == 2 and all("not identified separately" in w for w in result.warnings)
    assert result.max_relative_error < 1e-6  # the combination still predicts the cells


def test_parameter_pinned_at_zero_is_reported() -> None:
    grid = design_grid(4, 2, 4, max_configs=10)
    cells = cells_from(grid.cells, 4, TRUE)
    # small requests 5x faster than the model allows: only a negative term could explain it, NNLS pins it at 0
    lean = [Cell(c.layout, c.g, c.op, c.pattern, c.p, c.m, c.request_size, c.requests_per_rank,
                 c.time * (0.2 if c.request_size <= 65536 else 1.0), source=c.source) for c in cells]
    result = fit(Measurements(4, lean, "test"))
    assert all(getattr(result.params, n) >= 0 for n in NAMES)
    assert result.at_bound and all(f"{p}: fitted at the bound 0" in " ".join(result.warnings) for p in result.at_bound)


def test_absolute_weighting_and_bad_options() -> None:
    grid = design_grid(4, 2, 4, max_configs=10)
    m = Measurements(4, cells_from(grid.cells, 4, TRUE), "test")
    assert fit(m, weighting="absolute").params.beta == pytest.approx(TRUE.beta, rel=1e-6)
    with pytest.raises(InputError, match="unknown weighting"):
        fit(m, weighting="log")
    with pytest.raises(InputError, match="unknown variant"):
        fit(m, variant="paper")
    with pytest.raises(InputError, match="has no cells"):
        fit(Measurements(4, [], "test", "none.json"))


def test_zero_time_cannot_be_weighted_relatively() -> None:
    c = Cell("1-DH", None, "read", "sequential", 1, 1, 4096, 1, 0.0, source="cells[0]")
    with pytest.raises(InputError, match=r"x.json: cells\[0\]: measured time is 0.0"):
        fit(Measurements(4, [c], "probe", "x.json"))


def test_result_document_is_a_params_file() -> None:
    grid = design_grid(4, 2, 4, max_configs=10)
    doc = fit(parse_probe(simulate_probe(grid, TRUE, noise=0.01), "s.json")).to_dict()
    again = CostParams.model_validate(doc)  # extra keys ignored: usable as --params
    assert again.e == doc["e"] and again.beta == doc["beta"]
    assert len(doc["cells"]) == len(grid.cells)
    first = doc["cells"][0]
    assert first["residual_s"] == pytest.approx(first["measured_s"] - first["predicted_s"])
    assert first["relative_error"] == pytest.approx(first["residual_s"] / first["measured_s"])
    assert doc["source"] == {"format": "probe", "path": "s.json"}


def test_a_value_with_a_comparable_standard_error_is_poorly_determined_not_identified() -> None:
    import dataclasses

    grid = design_grid(4, 2, 4, max_configs=10)
    clean = fit(parse_probe(simulate_probe(grid, TRUE, noise=0.0), "exact.json"))
    assert clean.poorly_determined == () and all(clean.determined.values())
    # α_seq = 8e-5 s: a standard error of 4e-5 is exactly half of it (poor); 3.9e-5 is just under (fine)
    value = clean.params.alpha_seq
    poor = dataclasses.replace(clean, stderr={**clean.stderr, "alpha_seq": 0.5 * value})
    fine = dataclasses.replace(clean, stderr={**clean.stderr, "alpha_seq": 0.49 * value})
    assert poor.poorly_determined == ("alpha_seq",) and fine.poorly_determined == ()
    doc = poor.to_dict()["fit"]
    assert doc["identified"]["alpha_seq"] is False and doc["identified"]["e"] is True
    assert doc["poorly_determined"] == ["alpha_seq"]
    assert any(w.startswith("alpha_seq: poorly determined — standard error") and "50% of the value" in w
               for w in poor.warnings)
    # a term pinned at 0 gets the at-bound warning instead: 0 ± anything is not "comparable to the value"
    zero = dataclasses.replace(clean, params=clean.params.model_copy(update={"alpha_seq": 0.0}),
                               stderr={**clean.stderr, "alpha_seq": 1e-5})
    assert zero.poorly_determined == ()
