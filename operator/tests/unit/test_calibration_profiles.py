"""Calibration profiles: what OrangeFSCluster spec.calibration.profile names, checked against the CRDs
and shown to identify every parameter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pfslayout.calibration import DEFAULT_PROFILE, PROFILES, profile_grid
from pfslayout.calibration.design import columns, design_matrix, identifiability
from pfslayout.errors import InputError

CRDS = Path(__file__).resolve().parents[3] / "crds"


def _spec(crd: str) -> dict[str, Any]:
    doc = yaml.safe_load((CRDS / crd).read_text())
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]


def test_the_crd_offers_exactly_the_profiles() -> None:
    profile = _spec("orangefsclusters.yaml")["calibration"]["properties"]["profile"]
    assert set(profile["enum"]) == set(PROFILES)
    assert profile["default"] == DEFAULT_PROFILE


def test_standard_is_the_cost_calibration_default_grid() -> None:
    grid = _spec("costcalibrations.yaml")["grid"]["properties"]
    defaults = {k: v["default"] for k, v in grid.items() if "default" in v}
    standard = PROFILES["standard"].grid_spec()
    # minBytesPerRank has no CRD default, so an upgrade keeps the plan of a calibration in flight (absent:
    # requestsPerRank at every size); the profile sets the 4 MiB the lab validated the model with
    assert standard.pop("minBytesPerRank") == 4 << 20 and "default" not in grid["minBytesPerRank"]
    assert {k: defaults[k] for k in standard} == standard
    assert "maxConfigs" not in standard and "default" not in grid["maxConfigs"]  # the full factorial


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize(("servers", "nodes", "ranks"), [(2, 1, 1), (4, 2, 2), (16, 4, 4)])
def test_each_profile_identifies_all_five_parameters(name: str, servers: int, nodes: int, ranks: int) -> None:
    grid = profile_grid(name, servers, nodes, ranks)
    assert grid.design.rank == 5 and not grid.design.unused
    assert {c.request_size for c in grid.cells} == set(PROFILES[name].sizes)


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize(("servers", "nodes", "ranks"), [(4, 2, 2), (8, 2, 2), (16, 4, 4)])
def test_each_profile_separates_writes_and_shared_cores(name: str, servers: int, nodes: int, ranks: int) -> None:
    """What the lab's benchmark calibration finds where the platform shows it (e_write, beta_write,
    e_shared) and the cost of small split writes (v_small_write) the grid can tell apart: the nine-column
    design has full rank. (One rank alone cannot show shared cores: its round is its own messages, already
    e's; on 2 servers every request touches 1 or 2 of them and the three message terms move together.)"""
    grid = profile_grid(name, servers, nodes, ranks)
    cols = columns(("e", "beta"), shared=True, small=True)
    design = identifiability(design_matrix(grid.cells, servers, split=("e", "beta"), shared=True, small=True),
                             names=cols)
    assert design.rank == len(cols) == 9 and not design.unused, design.warnings()


def test_quick_is_smaller_than_standard() -> None:
    quick, standard = profile_grid("quick", 4, 2, 2), profile_grid("standard", 4, 2, 2)
    assert len(quick.cells) < len(standard.cells)
    assert sum(c.repetitions for c in quick.cells) < sum(c.repetitions for c in standard.cells)

    def moved(grid: object) -> int:
        return sum(c.request_size * c.requests_per_rank * c.p * c.repetitions for c in grid.cells)  # type: ignore[attr-defined]
    assert moved(quick) * 2 <= moved(standard)  # the bytes a shaped link has to carry


def test_unknown_profile() -> None:
    with pytest.raises(InputError, match="unknown calibration profile"):
        profile_grid("thorough", 4, 1, 1)
