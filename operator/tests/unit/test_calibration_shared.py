"""Issue 13: when clients and servers share cores, every message of a round costs CPU they all wait for —
``e_shared`` per message, p·nt messages per round (docs/cost-model.md "Shared cores"). The fit keeps the term
only where the grid separates it from e (client nodes with fewer ranks than p) and the measurements pin it
down above 0."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pfslayout.calibration import design_grid, fit, parse_probe, simulate_probe
from pfslayout.calibration.design import CellConfig, columns, design_matrix
from pfslayout.costmodel import CostParams, cost
from pfslayout.kinds.costcalibration.status import params_block
from pfstestkit.cli import run_wide

MIB = 1 << 20
BASE = CostParams(e=2.0e-4, v=1.0 / (300 * MIB), alpha_seq=5.0e-5, alpha_rand=3.0e-4, beta=1.0 / (30 * MIB))
SHARED = BASE.model_copy(update={"e_shared": 6.0e-5})


@pytest.mark.parametrize(("layout", "g", "nt"), [("1-DV", None, 1), ("1-DH", None, 8), ("2-D", 2, 4), ("2-D", 4, 2)])
def test_the_column_counts_the_messages_of_a_round(layout: str, g: int | None, nt: int) -> None:
    cell = CellConfig(layout, g, "read", "sequential", 6, 3, 4 * MIB, 10)  # 4 MiB: every server of the layout
    row = design_matrix([cell], 8, shared=True)[0]
    assert columns(shared=True)[-1] == "e_shared" and row[-1] == 10 * 6 * nt
    assert list(row[:-1]) == list(design_matrix([cell], 8)[0])  # the five columns are untouched
    with_, without = (cost(layout, 6, 8, 3, 4 * MIB, g, params=p) for p in (SHARED, BASE))
    assert float(with_.T_e - without.T_e) == pytest.approx(6 * nt * 6.0e-5)
    assert float(with_.total - with_.T_e) == pytest.approx(float(without.total - without.T_e))


def test_a_small_request_counts_only_the_servers_it_touches() -> None:
    # 16 KiB of 1-DH on 8 servers is striped at 4 KiB: 4 servers, realised as 2-D g=2 (planner.classify)
    cell = CellConfig("1-DH", None, "write", "random", 6, 3, 16384, 1)
    assert design_matrix([cell], 8, shared=True)[0][-1] == 6 * 4


def test_two_client_nodes_separate_it_and_the_fit_recovers_it() -> None:
    grid = design_grid(8, 2, 4)
    result = fit(parse_probe(simulate_probe(grid, SHARED, noise=0.02, seed=3), "shared.json"))
    assert result.params.e_shared == pytest.approx(6.0e-5, rel=0.15)
    assert result.params.e == pytest.approx(BASE.e, rel=0.15)
    assert result.columns[-1] == "e_shared" and result.determined["e_shared"]
    doc = result.to_dict()
    assert doc["e_shared"] == result.params.e_shared and "e_shared" in doc["fit"]["shared_cores"]
    assert params_block(result)["e_shared"] == result.params.e_shared  # CostCalibration.status.params
    assert CostParams.model_validate(doc).e_shared == result.params.e_shared  # the document is a --params file


def test_one_client_node_cannot_tell_it_from_e() -> None:
    # every rank on one node: m = p, so the client's m·nt messages are the round's p·nt — one column
    grid = design_grid(4, 1, 4)
    A = design_matrix(grid.cells, 4, shared=True)
    assert np.allclose(A[:, 0], A[:, -1])
    result = fit(parse_probe(simulate_probe(grid, SHARED, noise=0.02, seed=3), "one-node.json"))
    assert result.params.e_shared is None and "e_shared" not in result.columns
    assert "does not identify it" in result.shared_note
    assert result.params.e == pytest.approx(BASE.e + 6.0e-5, rel=0.15)  # e absorbs it: the same predictions


def test_no_such_cost_keeps_the_five_parameter_form() -> None:
    result = fit(parse_probe(simulate_probe(design_grid(8, 2, 4), BASE, noise=0.02, seed=3), "plain.json"))
    assert result.params.e_shared is None and result.columns[:5] == ("e", "v", "alpha_seq", "alpha_rand", "beta")
    assert "messages not charged for shared cores" in result.shared_note


def test_writes_keep_their_own_terms_beside_it() -> None:
    truth = SHARED.model_copy(update={"e_write": 1.6 * BASE.e, "beta_write": 1.3 * BASE.beta})
    result = fit(parse_probe(simulate_probe(design_grid(8, 2, 4), truth, noise=0.01, seed=4), "both.json"))
    assert result.columns[-3:] == ("e_write", "beta_write", "e_shared")
    for name in ("e", "e_write", "beta", "beta_write", "e_shared"):
        assert getattr(result.params, name) == pytest.approx(getattr(truth, name), rel=0.15), name


def test_the_cli_table_shows_the_term_and_why(tmp_path: Path) -> None:
    doc = tmp_path / "shared.json"
    doc.write_text(json.dumps(simulate_probe(design_grid(8, 2, 4), SHARED, noise=0.02, seed=3)))
    out = run_wide("calibrate", "--measurements", str(doc))
    assert "ms per message of all ranks (shared cores)" in out
    assert "shared cores: every message of a round also costs e_shared" in out


def test_reads_whose_messages_cost_only_the_shared_term_still_give_writes_their_e() -> None:
    # kind (issue 33): every read message's cost is shared CPU (e = 0, e_shared > 0) and writes cost more per
    # message; the read e then fits at or near 0, which must not stop e_write from being kept
    truth = BASE.model_copy(update={"e": 0.0, "e_shared": 6.0e-5, "e_write": 1.5e-4})
    for seed in (5, 6, 7):
        result = fit(parse_probe(simulate_probe(design_grid(4, 2, 4), truth, noise=0.02, seed=seed), "kind.json"))
        assert result.params.e_write == pytest.approx(1.5e-4, rel=0.05), seed
        assert result.params.e_shared == pytest.approx(6.0e-5, rel=0.1), seed
        assert result.params.e < 5e-6 and result.split_note.startswith("writes have their own e"), seed
        # the note names the e_shared this fit publishes, not the one of the fit before the split
        assert f"e_shared = {result.params.e_shared:.3g} s" in result.shared_note, (seed, result.shared_note)
