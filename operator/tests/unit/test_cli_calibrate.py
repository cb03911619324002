"""`pfslayout calibrate` through the installed console script: one JSON document with --json, a table
otherwise, and bad files as one line naming the field with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfslayout.costmodel import CostParams

DATA = Path(__file__).resolve().parents[1] / "data"
MIB = 1 << 20
# the parameters tests/data/make_fixtures.py simulated both fixtures from
KNOWN = CostParams(e=2.0e-4, v=1.0 / (400 * MIB), alpha_seq=6.0e-5, alpha_rand=4.0e-4, beta=1.0 / (150 * MIB))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("pfslayout")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from pfslayout.cli import main; main()"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False, timeout=120)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize(("name", "extra", "tolerance"),
                         [("probe-synthetic.json", (), 0.06), ("ior-summary.json", ("--servers", "4"), 0.06)])
def test_json_recovers_the_simulated_parameters(name: str, extra: tuple[str, ...], tolerance: float) -> None:
    result = cli("calibrate", "--measurements", str(DATA / name), *extra, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    for key in ("e", "v", "alpha_seq", "alpha_rand", "beta"):
        assert doc[key] == pytest.approx(getattr(KNOWN, key), rel=tolerance), key
    assert doc["fit"]["r2"] > 0.99 and doc["fit"]["rank"] == 5 and doc["warnings"] == []
    assert doc["fit"]["cells"] == len(doc["cells"]) > 0
    assert doc["source"]["format"] == ("ior" if "ior" in name else "probe")


def test_output_feeds_cost_as_params(tmp_path: Path) -> None:
    result = cli("calibrate", "--measurements", str(DATA / "probe-synthetic.json"), "--json")
    params = tmp_path / "params.json"
    params.write_text(result.stdout)
    calibrated = json.loads(result.stdout)
    cost = cli("cost", "--layout", "1-DV", "--p", "4", "--n", "4", "--m", "1", "--s", str(MIB), "--params",
               str(params), "--json")
    assert cost.returncode == 0, cost.stderr
    # 1-DV, p = n: one connection, one transfer, one startup, one read of s bytes
    expected = calibrated["e"] + MIB * calibrated["v"] + calibrated["alpha_seq"] + MIB * calibrated["beta"]
    assert json.loads(cost.stdout)["total"] == pytest.approx(expected, rel=1e-9)


def test_human_output_is_a_table_with_quality() -> None:
    result = cli("calibrate", "--measurements", str(DATA / "probe-synthetic.json"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Calibrated cost parameters" in out and "alpha_rand" in out and "MiB/s per server" in out
    assert "R²" in out and "rank 5/5" in out and "Largest relative residuals" in out


def test_unidentified_parameter_is_warned(tmp_path: Path) -> None:
    doc = json.loads((DATA / "probe-synthetic.json").read_text())
    doc["cells"] = [c for c in doc["cells"] if c["pattern"] == "sequential"]
    path = tmp_path / "seq.json"
    path.write_text(json.dumps(doc))
    result = cli("calibrate", "--measurements", str(path), "--json")
    assert result.returncode == 0
    out = json.loads(result.stdout)
    assert out["fit"]["identified"]["alpha_rand"] is False
    assert any(w.startswith("alpha_rand: not identified") for w in out["warnings"])
    human = cli("calibrate", "--measurements", str(path))
    assert "warning: alpha_rand: not identified" in human.stderr


def test_bad_probe_field_is_one_line(tmp_path: Path) -> None:
    doc = json.loads((DATA / "probe-synthetic.json").read_text())
    doc["cells"][3]["request_size"] = "64K"
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(doc))
    line = one_error_line(cli("calibrate", "--measurements", str(path), "--json"))
    assert f"{path}: cells[3].request_size:" in line


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    assert "--servers: is required" in one_error_line(
        cli("calibrate", "--measurements", str(DATA / "ior-summary.json")))
    assert "unknown measurements format" in one_error_line(
        cli("calibrate", "--measurements", str(DATA / "ior-summary.json"), "--format", "csv"))
    assert "does not exist" in one_error_line(cli("calibrate", "--measurements", str(tmp_path / "none.json")))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert "is not valid JSON" in one_error_line(cli("calibrate", "--measurements", str(broken)))
    assert "unknown variant" in one_error_line(
        cli("calibrate", "--measurements", str(DATA / "probe-synthetic.json"), "--variant", "paper"))
    assert "--measurements" in one_error_line(cli("calibrate"))


def test_ior_layout_flag(tmp_path: Path) -> None:
    doc = json.loads((DATA / "ior-summary.json").read_text())
    for t in doc["tests"]:
        t["Parameters"]["testFileName"] = t["Options"]["test filename"] = "/scratch/testfile"
    path = tmp_path / "ior.json"
    path.write_text(json.dumps(doc))
    assert "does not name a layout" in one_error_line(cli("calibrate", "--measurements", str(path), "--servers", "4"))
    ok = cli("calibrate", "--measurements", str(path), "--servers", "4", "--layout", "1-DH", "--json")
    assert ok.returncode == 0 and {c["layout"] for c in json.loads(ok.stdout)["cells"]} == {"1-DH"}



def test_design_prints_a_checked_grid_and_pfsprobe_documents() -> None:
    result = cli("calibrate", "--design", "--servers", "4", "--nodes", "2", "--ranks-per-node", "4",
                 "--sizes", "4K,1M", "--target", "1-DH=/ofs/h", "--target", "1-DV=/ofs/v", "--target", "2-D:2=/ofs/g2",
                 "--backend", "pvfs2", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == "pfsprobe-grid/1" and doc["design"]["rank"] == 5
    assert {c["request_size"] for c in doc["cells"]} == {4096, MIB}
    grids = doc["pfsprobe_grids"]
    assert [g["placement"] for g in grids] == ["packed", "spread"]
    assert grids[0]["targets"] == [{"layout": "1-DH", "path": "/ofs/h", "g": None},
                                   {"layout": "1-DV", "path": "/ofs/v", "g": None},
                                   {"layout": "2-D", "path": "/ofs/g2", "g": 2}]
    assert grids[0]["backend"] == "pvfs2" and grids[0]["request_sizes"] == [4096, MIB]
    human = cli("calibrate", "--design", "--servers", "4", "--nodes", "2", "--ranks-per-node", "4", "--max-configs",
        "6")
    assert human.returncode == 0 and "Probe grid: 12 cells, rank 5/5" in human.stdout


def test_design_errors_are_one_line() -> None:
    assert "at least 2 servers" in one_error_line(cli("calibrate", "--design", "--servers", "1", "--nodes", "2",
                                                      "--ranks-per-node", "2"))
    assert "--servers: is required with --design" in one_error_line(cli("calibrate", "--design"))
    assert "--target: '2-D=/x' is not LAYOUT=DIR" in one_error_line(
        cli("calibrate", "--design", "--servers", "4", "--target", "2-D=/x"))
    assert "targets: no directory for layout(s) 2-D:2" in one_error_line(
        cli("calibrate", "--design", "--servers", "4", "--target", "1-DH=/x", "--target", "1-DV=/y"))
    assert "--design: cannot be combined" in one_error_line(
        cli("calibrate", "--design", "--servers", "4", "--measurements", str(DATA / "probe-synthetic.json")))
    assert "--sizes: '4Q' is not a size" in one_error_line(cli("calibrate", "--design", "--servers", "4", "--sizes",
        "4Q"))


def test_several_measurement_files_fit_together(tmp_path: Path) -> None:
    doc = json.loads((DATA / "probe-synthetic.json").read_text())
    half = len(doc["cells"]) // 2
    first, second = tmp_path / "packed.json", tmp_path / "spread.json"
    first.write_text(json.dumps({**doc, "cells": doc["cells"][:half]}))
    second.write_text(json.dumps({**doc, "cells": doc["cells"][half:]}))
    both = cli("calibrate", "--measurements", str(first), "--measurements", str(second), "--json")
    whole = cli("calibrate", "--measurements", str(DATA / "probe-synthetic.json"), "--json")
    assert both.returncode == 0, both.stderr
    a, b = json.loads(both.stdout), json.loads(whole.stdout)
    assert a["e"] == pytest.approx(b["e"], rel=1e-9) and a["beta"] == pytest.approx(b["beta"], rel=1e-9)
    assert a["cells"][0]["source"] == f"{first}:cells[0]" and a["cells"][half]["source"] == f"{second}:cells[0]"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**doc, "platform": {**doc["platform"], "servers": 8}}))
    assert "files disagree on the number of servers" in one_error_line(
        cli("calibrate", "--measurements", str(first), "--measurements", str(other)))
