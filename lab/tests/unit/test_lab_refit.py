"""lab/bench/refit_loop.py reads a product-loop report back the way the product wrote it: refitting the
operator's form on a committed run's calibration cells gives the parameters the operator published, and
costing its held-out cells gives the predictions the report holds — else every form it compares would be
scored on cells that are not the ones measured."""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from pfslayout.calibration.design import design_matrix

REPO = Path(__file__).resolve().parents[3]
RUNS = sorted((REPO / "docs" / "results" / "loop-runs").glob("*.json"))
# the runs whose operator still fitted the seeds' sum (before issue 33's overlapped form)
SUMMED_RUNS = [p for p in RUNS if "overlap" not in json.loads(p.read_text())["calibration"]["params"]]


def _refit() -> ModuleType:  # a bench script, not a package module
    spec = importlib.util.spec_from_file_location("refit_loop", REPO / "lab" / "bench" / "refit_loop.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
def test_the_operator_form_reproduces_the_report(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = json.loads(path.read_text())
    overlapped = bool(report["calibration"]["params"].get("overlap"))
    if not overlapped:  # a run from before the overlapped form (issue 33): the fit as it was then kept the sum
        # (the module by importlib: the package's `fit` attribute is the function)
        monkeypatch.setattr(importlib.import_module("pfslayout.calibration.fit"), "OVERLAP_GAIN", float("inf"))
    if "v_small_write" not in report["calibration"]["params"]:  # nor, before v_small_write, did it try that
        monkeypatch.setattr(importlib.import_module("pfslayout.calibration.fit"), "_with_small",
                            lambda base, *args, **kwargs: base)
    refit = _refit()
    servers = report["setup"]["servers"]
    cal = refit.calibration_cells(report)
    assert len(cal) == report["calibration"]["fit"]["cells"]
    held = refit.heldout_cells(report)
    assert len(held) == len(report["per_cell"])
    predict, about = refit.forms(cal, servers)["operator"]
    for cell, row in zip(held, report["per_cell"]):
        configs = refit.layouts_of(cell)
        got = predict(design_matrix(configs, servers, shared=True), configs)
        np.testing.assert_allclose(got, [row["predicted"][k] for k in cell.layouts], rtol=1e-6)
    for name, value in report["calibration"]["params"].items():
        if isinstance(value, float | int) and not isinstance(value, bool):  # overlap: said by the suffix
            assert f"{name} {value:.3g}" in about
    assert about.endswith(", overlapped" if overlapped else ", summed")


@pytest.mark.parametrize("path", SUMMED_RUNS, ids=lambda p: p.stem)
def test_the_overlapped_form_is_what_the_fit_now_keeps(path: Path) -> None:
    # on the runs from before it, the fit now keeps the overlapped form (docs/cost-model.md "Overlapped
    # network and storage"), and it picks the measured best in more decisive held-out cells than the sum did
    refit = _refit()
    report = json.loads(path.read_text())
    servers = report["setup"]["servers"]
    predict, about = refit.forms(refit.calibration_cells(report), servers)["operator"]
    assert about.endswith(", overlapped")
    verdict = refit.score_form(refit.heldout_cells(report), predict, servers)
    right, decisive = (int(x) for x in verdict.split(" decisive right")[0].split("/"))
    assert right > report["correct_decisive"] or right / decisive > report["correct_decisive_rate"]


def test_a_report_without_calibration_cells_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "old.json"  # written before the reports kept loop-cal's cells
    old.write_text(json.dumps({"calibration": {"params": {}}, "per_cell": [], "setup": {"servers": 4}}))
    monkeypatch.setattr("sys.argv", ["refit_loop.py", str(old)])
    with pytest.raises(SystemExit, match=r"has no calibration\.cells"):
        _refit().main()


def test_pieces_are_the_hints_realisation() -> None:
    # small_writes.py labels its cells with them: servers touched and the largest piece, as the planner's
    # hints realise the layout (strips of at least 4 KiB)
    refit = _refit()
    assert refit.pieces("1-DH", None, 4, 12288) == (3, 4096)  # 3 of 4 servers
    assert refit.pieces("2-D", 2, 4, 32768) == (2, 16384)
    assert refit.pieces("1-DV", None, 4, 8192) == (1, 8192)
