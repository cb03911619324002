"""Cost-model inputs, parameters file and seeds: bad input names its field; seeds are 003 Table 3."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from pfslayout.costmodel import MIB, SEED_ETHERNET, SEED_INFINIBAND, CostParams, cost, load_params, table_row
from pfslayout.errors import InputError


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"layout": "3-D"}, "layout"),
        ({"layout": "2-D", "g": 0}, "g"),
        ({"layout": "2-D", "g": -1}, "g"),
        ({"layout": "2-D", "g": 17}, "g"),
        ({"layout": "2-D", "g": None}, "g"),
        ({"p": 0}, "p"),
        ({"m": 0}, "m"),
        ({"m": 9, "p": 8}, "m"),
        ({"n": 0}, "n"),
        ({"s": -1}, "s"),
        ({"s": float("nan")}, "s"),
        ({"p": 2.5}, "p"),
        ({"variant": "paper"}, "variant"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict, field: str) -> None:
    args = {"layout": "1-DV", "p": 8, "n": 16, "m": 1, "s": 4096, "g": None, "variant": "corrected"} | kwargs
    with pytest.raises(InputError) as err:
        cost(args["layout"], args["p"], args["n"], args["m"], args["s"], args["g"], variant=args["variant"])
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_bad_value_inside_an_array_is_reported() -> None:
    with pytest.raises(InputError, match=r"^p: must be at least 1 \(got 0\)"):
        cost("1-DH", np.array([4, 0, 2]), 8, np.array([1, 1, 1]), np.array([1.0, 2.0, 3.0]))


def test_seeds_are_table_3_in_mib() -> None:
    assert SEED_ETHERNET.e == 0.0003 and SEED_INFINIBAND.e == 0.0002
    assert SEED_ETHERNET.v * 120 * MIB == pytest.approx(1.0)
    assert SEED_INFINIBAND.v * 1000 * MIB == pytest.approx(1.0)
    for seed in (SEED_ETHERNET, SEED_INFINIBAND):
        assert (seed.alpha_seq, seed.alpha_rand) == (0.0001, 0.0003)
        assert seed.beta * 120 * MIB == pytest.approx(1.0)


def test_random_selects_alpha_rand_per_request() -> None:
    got = cost("1-DV", np.array([1, 1]), 4, np.array([1, 1]), np.array([0, 0]), random=np.array([False, True]))
    assert got.T_s.tolist() == [0.0001, 0.0003]


def test_load_params_json_and_yaml(tmp_path: Path) -> None:
    body = {"e": 1e-4, "v": 1e-9, "alpha_seq": 2e-4, "alpha_rand": 5e-3, "beta": 3e-9,
            "servers": [{"name": "s0"}, {"name": "s1", "beta": 6e-9}], "r2": 0.99}
    (tmp_path / "p.json").write_text(json.dumps(body))
    (tmp_path / "p.yaml").write_text("e: 1.0e-4\nv: 1.0e-9\nalpha_seq: 2.0e-4\nalpha_rand: 5.0e-3\nbeta: 3.0e-9\n")
    j = load_params(tmp_path / "p.json")
    y = load_params(tmp_path / "p.yaml")
    assert j.scalars() == y.scalars() == {"e": 1e-4, "v": 1e-9, "alpha_seq": 2e-4, "alpha_rand": 5e-3, "beta": 3e-9}
    assert j.heterogeneous and not y.heterogeneous
    assert j.for_server(1).beta == 6e-9 and j.for_server(0).beta == 3e-9


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"e": 1, "v": 1, "alpha_seq": 1, "alpha_rand": 1}', r"beta: is required"),
        ('{"e": -1, "v": 1, "alpha_seq": 1, "alpha_rand": 1, "beta": 1}', r": e: "),
        ('{"e": "fast", "v": 1, "alpha_seq": 1, "alpha_rand": 1, "beta": 1}', r": e: "),
        ('{"e": 1, "v": 1, "alpha_seq": 1, "alpha_rand": 1, "beta": 1, "servers": [{"beta": 0}]}',
         r"servers\.0\.beta"),
        ("[1, 2]", r"must be a mapping"),
        ('{"e": 1,', r"not valid JSON/YAML"),
    ],
)
def test_load_params_errors_name_the_field(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as err:
        load_params(path)
    assert "\n" not in str(err.value)


def test_missing_params_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--params: file .* does not exist"):
        load_params(tmp_path / "nope.yaml")


def test_table_row_labels() -> None:
    assert table_row("1-DV", 8, 16, 1) == "p<=n"
    assert table_row("1-DV", 64, 16, 5) == "p>n,m>ceil(p/n)"
    assert table_row("1-DH", 64, 16, 4) == "m<=ceil(p/n)"
    assert table_row("2-D", 64, 16, 5, 8) == "p>g,m>ceil(p/g)/ceil(n/g)"


def test_params_model_is_frozen() -> None:
    with pytest.raises(ValidationError):
        CostParams.model_validate(SEED_ETHERNET.scalars()).e = 1.0  # type: ignore[misc]


def test_random_accepts_0_1_and_rejects_other_values() -> None:
    got = cost("1-DV", np.array([1, 1]), 4, np.array([1, 1]), np.array([0, 0]), random=np.array([0, 1]))
    assert got.T_s.tolist() == [0.0001, 0.0003]
    with pytest.raises(InputError, match=r"^random: "):
        cost("1-DV", 1, 4, 1, 0, random=np.array([2]))


def test_mismatched_array_lengths_are_an_input_error() -> None:
    with pytest.raises(InputError, match=r"^p: p, m, s and g arrays must have one shape"):
        cost("1-DV", np.array([4, 4, 4]), 8, np.array([1, 1]), np.array([1.0, 2.0, 3.0]))


def test_int32_and_unsigned_columns() -> None:
    p32 = np.array([17, 64], dtype=np.int32)
    pu = p32.astype(np.uint16)
    a = cost("1-DV", p32, 16, np.array([1, 2], dtype=np.int32), np.array([4096, 4096]))
    b = cost("1-DV", pu, 16, np.array([1, 2], dtype=np.uint8), np.array([4096, 4096]))
    assert a.T_s.tolist() == b.T_s.tolist() == [2 * 0.0001, 4 * 0.0001]  # ⌈17/16⌉ = 2, ⌈64/16⌉ = 4
