"""The lab's scoring and report (lab/pfslab/score.py, report.py): pure functions, checked on
synthetic probe documents (``simulate_probe`` at known parameters, no noise) and on hand-made cells whose
expected values are worked out in the comments."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pfslab.report import build_report, config_label, plot_winners, results_markdown, why_missed, write_report
from pfslab.score import (
    Config,
    LabCell,
    baselines,
    best,
    decisive,
    fastest,
    gain,
    group_cells,
    model_pick,
    regret,
    score,
    speedup,
    spread,
)
from pfslayout.calibration.grid import design_grid
from pfslayout.calibration.measurements import Cell, Measurements, parse_probe
from pfslayout.calibration.synthetic import simulate_probe
from pfslayout.costmodel import MIB, SEED_ETHERNET, SEEDS, CostParams

SERVERS = 4
# Connections 10× dearer than the Ethernet seed's (e = 3 ms against 0.3 ms), the rest like the InfiniBand
# seed. Each server a request touches costs a connection, so layouts touching fewer servers win cells the
# seeds give to 1-DH; see test_seeds_miss_where_connections_dominate for the arithmetic. With these values
# all three layouts win somewhere on the grid, so no fixed layout can pass for the model.
TRUE = CostParams(e=0.003, v=1.0 / (1000 * MIB), alpha_seq=0.0001, alpha_rand=0.0003, beta=1.0 / (120 * MIB))
CONFIG = Config("write", "sequential", "file-per-process", p=1, m=1, request_size=1 << 20, requests_per_rank=4)


def grid_measurements(params: CostParams = TRUE) -> Measurements:
    grid = design_grid(SERVERS, 2, 4, sizes=(4096, 1 << 20, 4 << 20), requests_per_rank=4, repetitions=3)
    return parse_probe(simulate_probe(grid, params, noise=0.0), "synthetic")


def cell(medians: dict[str, float], config: Config = CONFIG) -> LabCell:
    """A hand-made cell whose every repetition equals its median."""
    return LabCell.build(config, {k: (v, v, v) for k, v in medians.items()})


def measured(layout: str, g: int | None, p: int, times: tuple[float, ...]) -> Cell:
    return Cell(layout=layout, g=g, op="read", pattern="random", p=p, m=1, request_size=65536, requests_per_rank=8,
                time=sorted(times)[len(times) // 2], times=times, sharing="shared")


# ------------------------------------------------------------------------------------------- grouping


def test_group_cells_by_configuration_in_a_fixed_order() -> None:
    grid = grid_measurements()
    cells = group_cells(grid)
    # p ∈ {1, 2, 4, 8} placed packed and spread over 2 nodes of 4 gives (p, m) = (1,1) (2,1) (2,2) (4,2) (4,4)
    # (8,4): 6 pairs × 3 sizes × 2 patterns × 2 ops = 72 configurations, each with 1-DH, 1-DV and 2-D:2
    # (the only divisor of 4 strictly between 1 and 4): 216 measured cells.
    assert len(grid.cells) == 216
    assert len(cells) == 72
    assert all(c.layouts == ("1-DH", "1-DV", "2-D:2") for c in cells)
    assert all(len(ts) == 3 for c in cells for ts in c.times.values())
    shuffled = Measurements(servers=SERVERS, cells=random.Random(1).sample(grid.cells, len(grid.cells)),
                            source_format="probe")
    assert group_cells(shuffled) == cells


def test_one_layout_configuration_is_left_out_and_counted() -> None:
    m = Measurements(servers=SERVERS, source_format="probe", cells=[
        measured("1-DH", None, 4, (2.0, 1.0, 3.0)), measured("2-D", 2, 4, (4.0, 5.0, 6.0)),
        measured("1-DV", None, 8, (1.0, 1.0, 1.0)),  # p=8 has only 1-DV: no comparison
    ])
    cells = group_cells(m)
    assert [(c.p, c.layouts) for c in cells] == [(4, ("1-DH", "2-D:2"))]
    assert [(c.p, c.layouts) for c in cells.left_out] == [(8, ("1-DV",))]
    assert cells[0].median == {"1-DH": 2.0, "2-D:2": 5.0}  # medians of (1, 2, 3) and (4, 5, 6)
    # the report counts what was left out from the list itself, or from an explicit argument
    assert build_report(cells, SERVERS, TRUE, {})["left_out"] == 1
    assert build_report(cells, SERVERS, TRUE, {}, left_out=[])["left_out"] == 0
    assert build_report(list(cells), SERVERS, TRUE, {})["left_out"] == 0


def test_rerun_of_a_layout_pools_its_repetitions() -> None:
    m = Measurements(servers=SERVERS, source_format="probe", cells=[
        measured("1-DH", None, 4, (1.0, 2.0)), measured("1-DH", None, 4, (3.0, 10.0, 11.0)),
        measured("1-DV", None, 4, (1.0,)),
    ])
    (c,) = group_cells(m)
    # pooled 1, 2, 3, 10, 11 → median 3
    assert c.times["1-DH"] == (1.0, 2.0, 3.0, 10.0, 11.0) and c.median["1-DH"] == 3.0


# ------------------------------------------------------------------------------ best, decisive, regret


def test_spread_is_range_over_median() -> None:
    assert spread([1.0, 2.0, 4.0]) == pytest.approx(1.5)  # (4 − 1) / 2
    assert spread([3.0, 3.0]) == 0.0
    with pytest.raises(ValueError, match="no repetition"):
        spread([])


def test_decisive_needs_more_than_three_percent() -> None:
    # Powers of two make best × 1.03 exact: 1.0 × 1.03 is the double nearest 1.03.
    assert not decisive(cell({"1-DH": 1.0, "1-DV": 1.03}))  # exactly 3% ahead: a tie
    assert decisive(cell({"1-DH": 1.0, "1-DV": 1.0301}))
    assert not decisive(cell({"1-DV": 2.0, "1-DH": 2.06, "2-D:2": 9.0}))  # the runner-up decides, not the last
    assert decisive(cell({"1-DV": 2.0, "1-DH": 2.07, "2-D:2": 2.5}))  # runner-up is 2-D:2, 25% behind
    assert best(cell({"1-DV": 2.0, "1-DH": 2.07, "2-D:2": 2.5})) == "1-DV"


def test_ties_go_to_the_first_layout_in_order() -> None:
    tied = cell({"2-D:2": 1.0, "1-DV": 1.0, "1-DH": 1.5})
    assert best(tied) == "1-DV"  # 1-DV before 2-D:2, whatever the dict's order
    assert not decisive(tied)
    # built directly, so the dicts keep this (reversed) order: the tie-break must not lean on it
    direct = LabCell(**CONFIG.as_dict(), times={"2-D:2": (1.0,), "1-DV": (1.0,), "1-DH": (1.0,)},
                     median={"2-D:2": 1.0, "1-DV": 1.0, "1-DH": 1.0})
    assert best(direct) == "1-DH"
    assert fastest({"2-D:2": 3.0, "1-DV": 3.0}) == "1-DV"
    # the planner's tie rule: a layout realised as another measured one loses the tie to it
    assert fastest({"1-DH": 3.0, "2-D:2": 3.0}, {"1-DH": "2-D:2", "2-D:2": "2-D:2"}) == "2-D:2"
    assert fastest({"1-DH": 3.0, "2-D:4": 3.0}, {"1-DH": "2-D:2", "2-D:4": "2-D:4"}) == "1-DH"  # 2-D:2 unmeasured
    assert fastest({"1-DH": 2.9, "2-D:2": 3.0}, {"1-DH": "2-D:2"}) == "1-DH"  # only ties
    # Only α priced: at p = m = 1 every layout has one startup per request (ca = ⌈p/n⌉ = p = ⌈p/g⌉ = 1),
    # so all three predictions are equal → 1-DH.
    alpha_only = CostParams(e=0.0, v=0.0, alpha_seq=0.001, alpha_rand=0.003, beta=0.0)
    assert model_pick(direct, SERVERS, alpha_only) == "1-DH"


def test_regret_by_hand() -> None:
    c = cell({"1-DH": 2.0, "1-DV": 2.5, "2-D:2": 3.0})
    assert regret(c, "1-DH") == 0.0
    assert regret(c, "1-DV") == pytest.approx(0.25)  # 2.5 / 2 − 1
    assert regret(c, "2-D:2") == pytest.approx(0.5)  # 3 / 2 − 1
    with pytest.raises(ValueError, match="was not measured"):
        regret(c, "2-D:4")


def test_score_by_hand() -> None:
    cells = [
        cell({"1-DH": 1.0, "1-DV": 2.0}),  # decisive, best 1-DH
        cell({"1-DH": 1.0, "1-DV": 1.02}),  # tie (2%)
        cell({"1-DH": 4.0, "1-DV": 5.0}),  # decisive, best 1-DH
    ]
    s = score(cells, ["1-DH", "1-DV", "1-DV"])
    # decisive: cells 0 and 2; correct there: cell 0 only → 1/2.
    # regrets: 0, 0.02 (1.02/1 − 1), 0.25 (5/4 − 1); within 3%: cells 0 and 1 → 2/3.
    assert (s.cells, s.decisive, s.correct_decisive) == (3, 2, 1)
    assert s.correct_decisive_rate == pytest.approx(0.5)
    assert s.within_3pct == pytest.approx(2 / 3)
    assert s.mean_regret == pytest.approx(0.27 / 3)
    assert s.worst_regret == pytest.approx(0.25)


def test_score_without_decisive_cells_has_no_rate() -> None:
    s = score([cell({"1-DH": 1.0, "1-DV": 1.01})], ["1-DV"])
    assert (s.decisive, s.correct_decisive, s.correct_decisive_rate) == (0, 0, None)
    assert s.within_3pct == 1.0


def test_empty_input_is_an_error() -> None:
    with pytest.raises(ValueError, match="no cells to score"):
        score([], [])
    with pytest.raises(ValueError, match="no cells to score"):
        baselines([], SERVERS)
    with pytest.raises(ValueError, match="no cells to score"):
        build_report([], SERVERS, TRUE, {})
    with pytest.raises(ValueError, match="2 picks for 1 cells"):
        score([cell({"1-DH": 1.0, "1-DV": 2.0})], ["1-DH", "1-DV"])


# ------------------------------------------------------------------------------------ model and seeds


def test_true_parameters_pick_every_best_layout() -> None:
    cells = group_cells(grid_measurements())
    picks = [model_pick(c, SERVERS, TRUE) for c in cells]
    # where the layouts measure the same (4 KiB: every layout is one server) the planner's tie rule picks
    # what they are realised as, 1-DV; everywhere else the best itself
    tied = [len(set(c.median.values())) == 1 for c in cells]
    assert [p for p, t in zip(picks, tied) if not t] == [best(c) for c, t in zip(cells, tied) if not t]
    assert {p for p, t in zip(picks, tied) if t} == {"1-DV"}
    assert set(picks) == {"1-DH", "1-DV", "2-D:2"}
    s = score(cells, picks)
    assert s.decisive > 0
    assert s.correct_decisive == s.decisive and s.correct_decisive_rate == 1.0
    assert (s.within_3pct, s.mean_regret, s.worst_regret) == (1.0, 0.0, 0.0)


def test_seeds_miss_where_connections_dominate() -> None:
    # p = m = 1, n = 4, s = 1 MiB, sequential; per request (corrected table), with sβ = 1/120 s ≈ 8.33 ms:
    #   1-DV : e + s·v + α + s·β                       (one server)
    #   1-DH : 4e + s·v + α + s·β/4                    (ce = max(p, m·n) = 4, cb = p·s/n)
    #   2-D:2: 2e + s·v + α + s·β/2                    (ce = m·⌈n/g⌉ = 2, cb = s/(n//g))
    # TRUE (e = 3 ms, s·v = 1 ms, α = 0.1 ms): 2-D:2 = 6 + 1 + 0.1 + 4.167 = 11.267 ms, 1-DV = 3 + 1 + 0.1 +
    # 8.333 = 12.433 ms (10% behind: decisive), 1-DH = 12 + 1 + 0.1 + 2.083 = 15.183 ms → 2-D:2.
    # Both seeds (e = 0.3 / 0.2 ms): 1-DH − 2-D:2 = 2e − sβ/4 ≤ 0.6 − 2.08 < 0 and 1-DH − 1-DV = 3e − 3sβ/4 < 0
    # (v is common to all three) → 1-DH. Its regret: 15.1833 / 11.2667 − 1 ≈ 0.3476.
    cells = group_cells(grid_measurements())
    (c,) = [c for c in cells if (c.op, c.pattern, c.p, c.m, c.request_size) == ("write", "sequential", 1, 1, MIB)]
    assert best(c) == "2-D:2" and decisive(c)
    assert c.median["2-D:2"] == pytest.approx(4 * 0.0112667, rel=1e-4)  # 4 requests per rank
    assert [model_pick(c, SERVERS, seed) for seed in SEEDS.values()] == ["1-DH", "1-DH"]
    assert regret(c, "1-DH") == pytest.approx(15.1833 / 11.2667 - 1, rel=1e-4)

    base = baselines(cells, SERVERS)
    assert list(base) == ["seed:ethernet", "seed:infiniband", "fixed:1-DH", "fixed:1-DV", "fixed:2-D:2"]
    for name in ("seed:ethernet", "seed:infiniband"):
        assert base[name].correct_decisive < base[name].decisive
        assert base[name].worst_regret >= regret(c, "1-DH") - 1e-12


def test_fixed_layout_baselines_only_for_layouts_every_cell_measured() -> None:
    a = cell({"1-DH": 1.0, "1-DV": 2.0})
    b = cell({"1-DH": 3.0, "1-DV": 1.5, "2-D:2": 1.0}, Config("read", "random", "shared", 4, 2, 4096, 4))
    base = baselines([a, b], SERVERS)
    assert sorted(k for k in base if k.startswith("fixed:")) == ["fixed:1-DH", "fixed:1-DV"]  # no 2-D:2 in a
    # fixed 1-DH: a best (regret 0), b 3/1 − 1 = 2 → mean 1, correct 1 of 2 decisive
    dh = base["fixed:1-DH"]
    assert (dh.decisive, dh.correct_decisive, dh.mean_regret, dh.worst_regret) == (2, 1, 1.0, 2.0)
    # fixed 1-DV: a 2/1 − 1 = 1, b 1.5/1 − 1 = 0.5 → mean 0.75, none correct
    dv = base["fixed:1-DV"]
    assert (dv.correct_decisive, dv.mean_regret, dv.worst_regret) == (0, 0.75, 1.0)


# --------------------------------------------------------------------------------------------- report

SETUP = {"servers": SERVERS, "rate": "1gbit", "clients": 2, "orangefs": "2.10.0", "commit": "abc1234"}


def test_report_keys_and_per_cell_evidence(tmp_path: Path) -> None:
    cells = group_cells(grid_measurements())
    assert cells.left_out == []  # the grid measured every layout everywhere
    report = build_report(cells, SERVERS, TRUE, SETUP, left_out=[cell({"1-DV": 1.0})])
    assert set(report) == {"cells", "decisive", "correct_decisive", "correct_decisive_rate", "within_3pct",
                           "mean_regret", "worst_regret", "setup", "params", "baselines", "left_out", "gain",
                           "per_cell", "misses"}
    assert report["misses"] == []  # the true parameters on noiseless cells: no pick more than 3% off
    assert report["gain"] is None  # the synthetic grid did not measure the default layout
    assert report["cells"] == 72 and report["setup"] == SETUP
    assert report["params"]["e"] == 0.003 and report["params"]["variant"] == "corrected"
    assert report["left_out"] == 1
    assert set(report["baselines"]["seed:ethernet"]) == {"cells", "decisive", "correct_decisive",
                                                         "correct_decisive_rate", "within_3pct", "mean_regret",
                                                         "worst_regret"}
    row = report["per_cell"][0]
    assert set(row) == {*CONFIG.as_dict(), "median", "spread", "times", "predicted", "best", "decisive", "pick",
                        "regret", "within_3pct", "default", "speedup"}
    assert row["default"] is None and row["speedup"] is None
    # sort order: read < write, random < sequential, then p = 1, m = 1, the smallest size
    assert (row["op"], row["pattern"], row["p"], row["m"], row["request_size"]) == ("read", "random", 1, 1, 4096)
    for per_layout in ("median", "spread", "times", "predicted"):
        assert list(row[per_layout]) == ["1-DH", "1-DV", "2-D:2"], per_layout
    # noise 0: every repetition is the model's time, so measured median == prediction and spread == 0
    assert row["median"] == row["predicted"]
    assert row["spread"] == {"1-DH": 0.0, "1-DV": 0.0, "2-D:2": 0.0}
    assert row["times"]["1-DV"] == [row["median"]["1-DV"]] * 3
    path = write_report(report, tmp_path / "out" / "report.json")
    assert json.loads(path.read_text()) == report


def test_report_refuses_a_setup_for_other_servers() -> None:
    with pytest.raises(ValueError, match="servers=8"):
        build_report([cell({"1-DH": 1.0, "1-DV": 2.0})], SERVERS, TRUE, {"servers": 8})


def test_plot_winners_writes_a_png(tmp_path: Path) -> None:
    report = build_report(group_cells(grid_measurements()), SERVERS, SEED_ETHERNET, SETUP)
    path = plot_winners(report, tmp_path / "winners.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # four panels of markers and a legend, not an empty canvas
    with pytest.raises(ValueError, match="no cells"):
        plot_winners({**report, "per_cell": []}, tmp_path / "empty.png")


def test_markdown_names_command_and_misses() -> None:
    # scored with the Ethernet seed as "fitted": it misses the p = m = 1, 1 MiB write cell worked out above
    report = build_report(group_cells(grid_measurements()), SERVERS, SEED_ETHERNET, SETUP)
    command = "lab/lab run --servers 4 --rate 1gbit"
    md = results_markdown(report, command)
    assert command in md
    assert "| seed:ethernet |" in md and "| fixed:1-DV |" in md
    assert "| write sequential file-per-process p=1 m=1 s=1 MiB ×4 | 2-D:2 | 1-DH | +34.8% | predicted 1-DH " in md
    misses = [r for r in report["per_cell"] if not r["within_3pct"]]
    assert misses and md.count("\n| write ") + md.count("\n| read ") == len(misses)
    assert [m["cell"] for m in report["misses"]] == [config_label(r) for r in misses]
    assert all(m["why"].startswith("predicted ") for m in report["misses"])


def test_a_miss_whose_pattern_twin_measured_the_pick_best_is_explained_as_such() -> None:
    # tmpfs-like storage: the model ranks sequential and random alike, the measurements disagree
    seq = Config("write", "sequential", "file-per-process", 2, 2, 2 << 20, 8)
    rnd = Config("write", "random", "file-per-process", 2, 2, 2 << 20, 8)
    cells = [cell({"1-DH": 1.0, "2-D:2": 1.07}, seq), cell({"1-DH": 1.10, "2-D:2": 1.0}, rnd)]
    picks_2d = CostParams(e=1e-3, v=0.0, alpha_seq=0.0, alpha_rand=0.0, beta=0.0)  # 2-D:2: fewer messages
    report = build_report(cells, SERVERS, picks_2d, SETUP)
    rows = {r["pattern"]: r for r in report["per_cell"]}
    assert rows["sequential"]["pick"] == rows["random"]["pick"] == "2-D:2"
    why = why_missed(rows["sequential"], report["per_cell"])
    assert why.startswith("the same configuration with random access measured 2-D:2 best (1-DH +10%)")
    assert [m["why"] for m in report["misses"]] == [why]


def test_markdown_without_misses_says_so() -> None:
    report = build_report(group_cells(grid_measurements()), SERVERS, TRUE, SETUP)
    md = results_markdown(report, "lab run")
    assert "No misses" in md
    # the model's own times: every 1 and 4 MiB configuration decisive (48); the 24 of 4 KiB tie exactly,
    # since 4 KiB strips put a 4 KiB request on one server under 1-DH and 2-D:2 as under 1-DV
    assert "| **fitted (corrected)** | 48/48 (100.0%) | 100.0% | 0.0% | 0.0% |" in md


def test_validation_grids_give_small_requests_enough_bytes_to_measure() -> None:
    from pfslab.grids import by_requests, disjoint, validation
    from pfslayout.calibration.grid import requests_for

    # 16 KiB: 4 MiB / 16 KiB = 256 requests; 256 KiB and 4 MiB keep the 16 asked for, in one grid file
    made = validation(SERVERS, sizes=(4 << 20, 16 << 10, 256 << 10), procs=(6, 3), requests=16, min_bytes=4 << 20)
    assert [(g["request_sizes"], g["requests_per_rank"]) for g in made] == [([16 << 10], 256),
                                                                             ([256 << 10, 4 << 20], 16)]
    assert all(g["procs"] == [3, 6] and g["repetitions"] == 1 for g in made)
    assert requests_for(3 << 20, 1, 4 << 20) == 2  # rounded up: never less than the floor
    # no floor: one grid, as before
    assert [g["requests_per_rank"] for g in validation(SERVERS, requests=16, min_bytes=0)] == [16]
    # a size shared with the calibration is found in any of the grid files
    assert disjoint([{"request_sizes": [4096, 1 << 20], "procs": [1, 2, 4]}],
                    [*made, {"request_sizes": [1 << 20], "procs": [5]}]) == [f"request sizes {[1 << 20]}"]
    assert disjoint([{"request_sizes": [4096], "procs": [1, 2, 4]}], made) == []
    split = by_requests({"request_sizes": [1 << 20, 4096], "requests_per_rank": 8, "procs": [1, 2]}, 4 << 20)
    assert [(g["request_sizes"], g["requests_per_rank"], g["procs"]) for g in split] == [([4096], 1024, [1, 2]),
                                                                                          ([1 << 20], 8, [1, 2])]
    # the calibration's grid files come from the core's designed grid with the same floor (what the
    # operator's CostCalibration runs with spec.grid.minBytesPerRank), one file per count
    from pfslab.grids import calibration
    grids = calibration(SERVERS, "quick", min_bytes=4 << 20)
    assert sorted((g["request_sizes"], g["requests_per_rank"]) for g in grids) == [([8192], 512),
                                                                                   ([1 << 20, 4 << 20], 8)]


# ----------------------------------------------------------------------- gain over the default layout


def test_default_layout_is_a_baseline_not_a_candidate() -> None:
    # the probe's "default" cells go to Measurements.baseline, attach to their configuration's LabCell and
    # take no part in best/decisive: here the default (0.5 s) is faster than every model layout
    m = Measurements(servers=SERVERS, source_format="probe", cells=[
        measured("1-DH", None, 4, (2.0, 2.0, 2.0)), measured("1-DV", None, 4, (1.0, 1.0, 1.0))],
        baseline=[measured("default", None, 4, (0.5, 0.4, 0.6))])
    (c,) = group_cells(m)
    assert c.layouts == ("1-DH", "1-DV") and best(c) == "1-DV"
    assert c.baseline == 0.5 and c.baseline_times == (0.5, 0.4, 0.6)


def test_gain_is_the_geometric_mean_of_default_over_pick() -> None:
    other = Config("read", "random", "file-per-process", p=3, m=3, request_size=16384, requests_per_rank=256)
    # cell a: picks 1-DV (1 s) against a default of 4 s → 4×, decisive (1-DH 2 s is 100% behind)
    a = LabCell.build(CONFIG, {"1-DH": (2.0,), "1-DV": (1.0,)}, baseline=(4.0,))
    # cell b: picks 1-DH (2 s) against a default of 1 s → 0.5×; not decisive (1-DV 2.02 s is 1% behind)
    b = LabCell.build(other, {"1-DH": (2.0,), "1-DV": (2.02,)}, baseline=(1.0,))
    g = gain([a, b], ["1-DV", "1-DH"])
    assert g is not None
    assert g.cells == 2 and g.geomean == pytest.approx(2 ** 0.5)  # √(4 × 0.5)
    assert g.decisive == 1 and g.geomean_decisive == pytest.approx(4.0)
    assert g.best_geomean == pytest.approx(2 ** 0.5)  # the picks were the best in each: 1-DV in a, 1-DH in b
    assert g.worst == pytest.approx(0.5) and g.worst_cell == b.label()
    assert speedup(a, "1-DH") == pytest.approx(2.0)
    # a cell without the default measured counts neither way; none measured → no gain at all
    c = LabCell.build(other, {"1-DH": (1.0,), "1-DV": (3.0,)})
    assert speedup(c, "1-DH") is None
    assert gain([a, c], ["1-DV", "1-DH"]).cells == 1  # type: ignore[union-attr]
    assert gain([c], ["1-DH"]) is None
    with pytest.raises(ValueError, match="1 picks for 2 cells"):
        gain([a, b], ["1-DV"])


def test_report_carries_the_gain_and_its_sentence() -> None:
    a = LabCell.build(CONFIG, {"1-DH": (2.0,), "1-DV": (1.0,)}, baseline=(3.0,))
    doc = build_report([a], SERVERS, TRUE, {})
    row = doc["per_cell"][0]
    assert row["default"] == 3.0 and row["speedup"] == pytest.approx(3.0 / row["median"][row["pick"]])
    assert doc["gain"]["cells"] == 1 and doc["gain"]["geomean"] == pytest.approx(row["speedup"])
    text = results_markdown(doc, "lab/lab validate")
    assert f"measured {row['speedup']:.2f}× faster (geometric mean over 1 configurations" in text
    # without a default measurement: no gain, no sentence
    plain = build_report([cell({"1-DH": 2.0, "1-DV": 1.0})], SERVERS, TRUE, {})
    assert plain["gain"] is None and "default layout" not in results_markdown(plain, "x")
