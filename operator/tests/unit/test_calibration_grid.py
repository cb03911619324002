"""The designed grid: runnable cells only, rank 5 checked, refusal where a platform cannot identify all
five parameters, and pfsprobe grid documents that cover every cell."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from pfslayout.calibration import (
    PARAMS,
    design_grid,
    design_matrix,
    identifiability,
    requests_for,
    useful_groups,
)
from pfslayout.errors import InputError
from pfslayout.request_sizes import DEFAULT_SIZES

PLATFORMS = [(2, 1, 4), (4, 2, 4), (4, 1, 2), (6, 3, 2), (8, 4, 8), (16, 8, 8)]


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: "n{}x{}x{}".format(*p))
@pytest.mark.parametrize("compact", [None, 8])
def test_grid_is_runnable_and_identifies_everything(platform: tuple[int, int, int], compact: int | None) -> None:
    n, nodes, rpn = platform
    grid = design_grid(n, nodes, rpn, max_configs=compact)
    assert grid.design.rank == 5 and grid.design.identified == PARAMS
    assert np.isfinite(grid.design.condition) and grid.design.condition < 1e3
    # independent re-check of the rank on the unweighted matrix
    dm = design_matrix(grid.cells, n)
    assert np.linalg.matrix_rank(dm / np.linalg.norm(dm, axis=0)) == 5
    for c in grid.cells:
        assert 1 <= c.m <= min(c.p, rpn) and c.p <= nodes * rpn
        assert -(-c.p // c.m) <= nodes  # p ranks fit on the nodes with at most m per node
        assert c.m == (min(c.p, rpn) if c.placement == "packed" else -(-c.p // nodes))
        if c.layout == "2-D":
            assert c.g in useful_groups(n) and n % c.g == 0 and 1 < c.g < n
        else:
            assert c.g is None
    configs = {(c.layout, c.g, c.p, c.m, c.request_size, c.pattern) for c in grid.cells}
    # every configuration is measured for both ops
    assert len(grid.cells) == 2 * len(configs)
    if compact is not None:
        assert len(configs) == compact
    assert {c.pattern for c in grid.cells} == {"sequential", "random"}


def test_factorial_contents() -> None:
    grid = design_grid(4, 2, 4)
    assert {(c.layout, c.g) for c in grid.cells} == {("1-DH", None), ("1-DV", None), ("2-D", 2)}
    assert {c.p for c in grid.cells} == {1, 2, 4, 8}
    assert {c.request_size for c in grid.cells} == set(DEFAULT_SIZES)
    assert {(c.p, c.m) for c in grid.cells} == {(1, 1), (2, 2), (2, 1), (4, 4), (4, 2), (8, 4)}
    assert len(grid.cells) == 3 * 6 * len(DEFAULT_SIZES) * 2 * 2


def test_useful_groups() -> None:
    assert useful_groups(1) == [] and useful_groups(2) == [] and useful_groups(4) == [2]
    assert useful_groups(12) == [2, 3, 4, 6]


@pytest.mark.parametrize("nodes", [1, 4])
def test_one_server_is_refused_with_the_reason(nodes: int) -> None:
    with pytest.raises(InputError) as err:
        design_grid(1, nodes, 4)
    message = str(err.value)
    assert message.startswith("grid: ") and "at least 2 servers" in message
    assert "e, alpha_seq, alpha_rand: not identified separately" in message
    assert "v, beta: not identified separately" in message


def test_single_pattern_is_refused() -> None:
    with pytest.raises(InputError, match="alpha_rand: not identified"):
        design_grid(4, 2, 4, patterns=("sequential",))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"servers": 0}, "servers"), ({"sizes": ()}, "sizes"), ({"sizes": (0,)}, "sizes"),
     ({"ops": ("append",)}, "ops"), ({"patterns": ("strided",)}, "patterns"), ({"max_configs": 0}, "max_configs"),
     ({"repetitions": 0}, "repetitions"), ({"min_bytes_per_rank": -1}, "min_bytes_per_rank")],
)
def test_bad_arguments_name_the_field(kwargs: dict, field: str) -> None:
    args = {"servers": 4, "nodes": 2, "ranks_per_node": 4} | kwargs
    with pytest.raises(InputError, match=rf"^{field}: "):
        design_grid(**args)


def test_pfsprobe_grid_documents_cover_every_cell() -> None:
    grid = design_grid(4, 2, 4)
    targets = {"1-DH": "/ofs/1-DH", "1-DV": "/ofs/1-DV", "2-D:2": "/ofs/2-D-g2"}
    specs = grid.pfsprobe_grids(targets, backend="pvfs2")
    assert [s["placement"] for s in specs] == ["packed", "spread"]
    covered = set()
    for s in specs:
        assert s["servers"] == 4 and s["backend"] == "pvfs2"
        for t, p, size, pat, op in itertools.product(s["targets"], s["procs"], s["request_sizes"], s["patterns"],
                                                     s["ops"]):
            covered.add((s["placement"], t["layout"], t["g"], p, size, pat, op))
    wanted = {(c.placement, c.layout, c.g, c.p, c.request_size, c.pattern, c.op) for c in grid.cells}
    assert wanted <= covered
    with pytest.raises(InputError, match=r"targets: no directory for layout\(s\) 2-D:2"):
        grid.pfsprobe_grids({"1-DH": "/a", "1-DV": "/b"})


def test_identifiability_of_hand_matrices() -> None:
    full = identifiability(np.eye(5))
    assert full.rank == 5 and full.condition == pytest.approx(1.0) and full.warnings() == []
    cols = np.array([[1.0, 0, 1, 0, 0], [2.0, 0, 2, 0, 1], [0, 1, 0, 0, 3]])
    partial = identifiability(cols)
    assert partial.unused == ("alpha_rand",) and partial.confounded == (("e", "alpha_seq"),)
    assert partial.identified == ("v", "beta")


def test_a_byte_floor_lengthens_small_cells_and_splits_the_probe_documents() -> None:
    plain = design_grid(4, 2, 4, sizes=(4096, 65536, 1 << 20))
    grid = design_grid(4, 2, 4, sizes=(4096, 65536, 1 << 20), min_bytes_per_rank=4 << 20)
    # the same configurations; only small sizes make more requests (4 MiB / 4 KiB, 4 MiB / 64 KiB)
    assert [dataclasses.replace(c, requests_per_rank=16) for c in grid.cells] == plain.cells
    assert {(c.request_size, c.requests_per_rank) for c in grid.cells} == {(4096, 1024), (65536, 64), (1 << 20, 16)}
    assert requests_for(3 << 20, 1, 4 << 20) == 2 and requests_for(4096, 16) == 16
    assert grid.design.rank == 5
    targets = {"1-DH": "/o/h", "1-DV": "/o/v", "2-D:2": "/o/2"}
    docs = grid.pfsprobe_grids(targets)
    # a pfsprobe document has one requests-per-rank count: one per (placement, count), packed first
    assert [(d["placement"], d["request_sizes"], d["requests_per_rank"]) for d in docs] == [
        ("packed", [4096], 1024), ("packed", [65536], 64), ("packed", [1 << 20], 16),
        ("spread", [4096], 1024), ("spread", [65536], 64), ("spread", [1 << 20], 16)]
