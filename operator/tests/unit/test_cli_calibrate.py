"""`pfslayout calibrate` through the installed console script: one JSON document with --json, a table
otherwise, and bad files as one line naming the field with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfslayout.costmodel import CostParams

pytestmark = pytest.mark.unit

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
    assert "Calibrated cost parameters" in out and "alpha_rand" in out and "MiB/s disk" in out
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

