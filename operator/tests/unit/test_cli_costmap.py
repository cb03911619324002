"""`pfslayout cost-map`: the grid as JSON, the PNG, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfstestkit.cli import one_line_error, real_entry_point_runs, run_inproc


def test_json_grid(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_inproc(capsys, "cost-map", "--n", "16", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["n"] == 16 and doc["clients"] == 48 and doc["p"][0] == 1 and doc["s"][0] == 4096
    assert len(doc["winner"]) == len(doc["p"]) and len(doc["winner"][0]) == len(doc["s"])
    assert doc["winner"][0][-1] == "1-DH" and doc["winner"][-1][0] == "1-DV"
    assert any(w.startswith("2-D(g=") for row in doc["winner"] for w in row)


def test_png_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    png = tmp_path / "map.png"
    r = run_inproc(capsys, "cost-map", "--n", "8", "--png", str(png), "--params", "infiniband", "--random")
    assert r.code == 0, r.err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--n", "0", "--json"], "--n"),
        (["--n", "8"], "--png"),
        (["--n", "8", "--png", "map.jpg"], "--png"),
        (["--n", "8", "--json", "--g", "9"], "--g"),
        (["--n", "8", "--json", "--clients", "0"], "--clients"),
        (["--n", "8", "--json", "--variant", "x"], "variant"),
    ],
)
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], field: str) -> None:
    one_line_error(run_inproc(capsys, "cost-map", *args), field)


def test_real_entry_point(tmp_path_factory: pytest.TempPathFactory) -> None:
    res = real_entry_point_runs(tmp_path_factory.mktemp("cli-real"))
    one_line_error(res["map_bad"], "--n: must be at least 1")
