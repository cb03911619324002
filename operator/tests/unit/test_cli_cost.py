"""`pfslayout cost`, in process and through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfstestkit.cli import one_line_error, real_entry_point_runs, run_inproc


def test_json_matches_digest_row1(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_inproc(capsys, "cost", "--layout", "2-D", "--p", "8", "--n", "16", "--m", "1", "--s", "262144",
                   "--g", "8", "--random", "--variant", "printed", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert list(doc) == ["layout", "T_e", "T_x", "T_s", "T_rw", "total"]
    assert doc["layout"] == "2-D"
    assert doc["total"] * 1e3 == pytest.approx(4.0250, abs=5e-5)
    assert doc["T_e"] == pytest.approx(0.0006)


def test_params_file_and_seed_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prm = tmp_path / "p.yaml"
    prm.write_text("e: 0.001\nv: 0\nalpha_seq: 0.002\nalpha_rand: 0.004\nbeta: 0\n")
    r = run_inproc(capsys, "cost", "--layout", "1-DH", "--p", "4", "--n", "2", "--m", "1", "--s", "100",
                   "--params", str(prm), "--random", "--json")
    doc = json.loads(r.out)
    assert doc["T_e"] == pytest.approx(0.004) and doc["T_s"] == pytest.approx(0.016) and doc["T_x"] == 0.0
    ib = json.loads(run_inproc(capsys, "cost", "--layout", "1-DV", "--p", "1", "--n", "1", "--m", "1", "--s", "0",
                               "--params", "infiniband", "--json").out)
    assert ib["T_e"] == 0.0002


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_inproc(capsys, "cost", "--layout", "1-DV", "--p", "8", "--n", "16", "--m", "1", "--s", "4096")
    assert r.code == 0 and "T_rw" in r.out and "total" in r.out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--layout", "3-D"], "layout"),
        (["--layout", "2-D", "--g", "0"], "g"),
        (["--layout", "2-D", "--g", "17"], "g"),
        (["--layout", "2-D"], "g"),
        (["--p", "0"], "p"),
        (["--s", "-1"], "s"),
        (["--m", "9"], "m"),
        (["--variant", "journal"], "variant"),
        (["--params", "/nonexistent/p.yaml"], "--params"),
        (["--p", "many"], "--p"),
    ],
)
def test_bad_input_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], field: str) -> None:
    base = {"--layout": "1-DV", "--p": "8", "--n": "16", "--m": "1", "--s": "4096"}
    opts = dict(base)
    extra: list[str] = []
    it = iter(args)
    for key in it:
        opts[key] = next(it)
    argv = ["cost"] + [x for kv in opts.items() for x in kv] + extra
    one_line_error(run_inproc(capsys, *argv), field)


def test_real_entry_point(tmp_path_factory: pytest.TempPathFactory) -> None:
    res = real_entry_point_runs(tmp_path_factory.mktemp("cli-real"))
    assert res["cost_ok"].code == 0, res["cost_ok"].err
    assert json.loads(res["cost_ok"].out)["total"] * 1e3 == pytest.approx(68.2667, abs=5e-5)  # docs/seeds.md §2.9 row 2
    one_line_error(res["cost_bad_g"], "g: must be between 1 and n=16")
