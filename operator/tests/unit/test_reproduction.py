"""docs/reproduction.md's numbers, produced by the command the document shows."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pfslayout.costmodel import reproduce

MIB = 1 << 20


def test_command_prints_every_section() -> None:
    out = subprocess.run([sys.executable, "-m", "pfslayout.costmodel.reproduce", "all"], capture_output=True,
                         text=True, check=True).stdout
    doc = json.loads(out)
    assert set(doc) == {"implications", "fig2", "fig3", "hio", "digest"}
    assert doc["fig2"]["greedy_makespan"] == 4.0 and doc["fig2"]["local_makespan"] == 8.0
    assert doc["fig3"]["fifo"] == 24.0 and doc["fig3"]["hio"] == 18.0


def test_unknown_section_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "pfslayout.costmodel.reproduce", "fig9"], capture_output=True, text=True)
    assert r.returncode == 2 and "section: unknown 'fig9'" in r.stderr


def test_003_implications_on_the_cost_map() -> None:
    imp = reproduce.implications()
    assert set(imp["1_p_much_less_than_n_large_s_1DH"]["winners"]) == {"1-DH"}
    assert imp["2_p_near_n_2D"]["winners"] == ["2-D"]
    assert imp["2_p_near_n_2D"]["at_p_equal_n"] == ["1-DV"]  # the documented deviation at p = n exactly
    assert imp["3_p_much_greater_than_n_1DV"]["winners"] == ["1-DV"]
    assert imp["tiny_requests_1DV"] == ["1-DV"]
    b = imp["4_network_or_client_bottleneck_hurts_1DH"]
    ex = b["1DH_cost_over_best_geomean"]
    assert ex["ethernet, 3n client nodes"] < ex["ethernet, 4 client nodes"] < ex["ethernet, 1 client node"]
    assert ex["ethernet, e x10"] > ex["ethernet, 3n client nodes"]
    assert b["cells_won_by_1DH"]["ethernet, e x10"] < b["cells_won_by_1DH"]["ethernet, 3n client nodes"]


def test_004_hio_formulas() -> None:
    h = reproduce.hio()
    assert h["NIO_eq4"] == 5.5603 and h["SIO_eq5"] == 3.5
    assert h["HIO_best_eq6"] == 1.0 and h["HIO_gain_eq9"] == 2.5
    assert h["SIO_gain_eq8"] == pytest.approx(5.5603 - 3.5, abs=1e-4)


def test_digest_29_table() -> None:
    d = reproduce.digest()
    assert d["eth-rand/printed"] == {"1-DV": 4.7667, "1-DH": 6.8833, "2-D": 4.025}
    assert d["eth-seq/printed"] == {"1-DV": 68.2667, "1-DH": 92.2667, "2-D": 69.8667}
    assert d["ib-seq/printed"] == {"1-DV": 9.6333, "1-DH": 5.8667, "2-D": 5.6667}
    assert d["eth-rand-p1/printed"] == {"1-DV": 0.6651, "1-DH": 0.6041, "2-D": 0.9488}
    assert d["eth-rand-p1/corrected"]["1-DH"] == 5.1346
