"""Scoring the cost model against a validation grid (issue 13): does it pick the layout that measured
fastest? Pure functions over measured cells, no I/O, so the lab's command, the report and the unit tests
all score one way.

A *configuration* is everything but the layout (op, pattern, sharing, p, m, request size, requests per
rank); a ``LabCell`` is one configuration with every layout measured for it. Its winner is *decisive* when
its median beats the runner-up's by more than ``MARGIN`` (3%): closer than that, repetition noise on one
shared machine can swap them, so "correct" is only counted on decisive cells. *Regret* — how much slower
the pick measured than the best, ``median[pick] / best_median − 1`` — scores every cell, decisive or not.

Ties (equal medians, equal predictions) go to the first layout in ``layout_order``: 1-DH, 1-DV, then
2-D by ascending g, so a score never depends on the order cells were measured or listed in.

*Gain* is what a user asks: how much faster the pick measured than the file system's default layout (the
``default`` cells pfsprobe measures beside the model's layouts: OrangeFS's configured distribution,
simple_stripe with 64 KiB strips over every server). The default is a baseline, never a candidate: it does
not take part in ``best``, ``decisive`` or any pick.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pfslayout.calibration.design import CellConfig
from pfslayout.calibration.grid import layout_key
from pfslayout.calibration.measurements import BASELINE, Cell, Measurements
from pfslayout.calibration.synthetic import model_time
from pfslayout.costmodel import SEEDS, CostParams
from pfslayout.planner.classify import realised_as

MARGIN = 0.03  # the decisive / "within 3%" margin: about the repetition noise of the emulated cluster

_BASE_ORDER = {"1-DH": 0, "1-DV": 1, "2-D": 2}


def parse_layout_key(key: str) -> tuple[str, int | None]:
    """``layout_key``'s inverse: "2-D:2" → ("2-D", 2), "1-DH" → ("1-DH", None); anything else ValueError."""
    layout, sep, g = key.partition(":")
    if layout not in _BASE_ORDER or (layout == "2-D") != bool(sep) or (sep and not g.isdigit()):
        raise ValueError(f"not a layout key: {key!r} (expected 1-DH, 1-DV or 2-D:<g>)")
    return layout, (int(g) if sep else None)


def layout_order(key: str) -> tuple[int, int]:
    """Sort key of the tie-break order: 1-DH, 1-DV, 2-D:g by ascending g."""
    layout, g = parse_layout_key(key)
    return _BASE_ORDER[layout], g or 0


def fastest(times: Mapping[str, float], realised: Mapping[str, str] | None = None) -> str:
    """The layout with the smallest time; ties → first in ``layout_order`` (not the mapping's order), except
    that a layout ``realised`` as another of ``times`` loses a tie to it — the planner's rule
    (``planner.decide``: 1-DH of a request that touches fewer servers is that layout with more datafiles)."""
    if not times:
        raise ValueError("no layouts to choose from")
    other = {k: (realised or {}).get(k, k) for k in times}
    return min(sorted(times, key=layout_order), key=lambda k: (times[k], other[k] != k and other[k] in times))


@dataclass(frozen=True)
class Config:
    """A configuration: what the layouts of one comparison share."""

    op: str
    pattern: str
    sharing: str
    p: int
    m: int
    request_size: int
    requests_per_rank: int

    @property
    def random(self) -> bool:
        return self.pattern == "random"

    def sort_key(self) -> tuple[str, str, str, int, int, int, int]:
        return (self.op, self.pattern, self.sharing, self.p, self.m, self.request_size, self.requests_per_rank)

    def as_dict(self) -> dict[str, Any]:
        # only Config's own fields: a LabCell's times and medians are reported per layout, not here
        return {f.name: getattr(self, f.name) for f in fields(Config)}

    def label(self) -> str:
        return (f"{self.op} {self.pattern} {self.sharing} p={self.p} m={self.m} s={human_size(self.request_size)}"
                f" ×{self.requests_per_rank}")


@dataclass(frozen=True)
class LabCell(Config):
    """One configuration with its layouts' repetition times and medians, keyed by ``layout_key``.

    The dicts are excluded from hashing (they are unhashable); equality still compares them.
    ``baseline_times`` are the default layout's repetitions (empty when it was not measured)."""

    times: dict[str, tuple[float, ...]] = field(hash=False)
    median: dict[str, float] = field(hash=False)
    baseline_times: tuple[float, ...] = field(default=(), hash=False)

    def __post_init__(self) -> None:
        if set(self.times) != set(self.median):
            raise ValueError(f"times has layouts {sorted(self.times)} but median has {sorted(self.median)}")
        for key in self.median:
            parse_layout_key(key)

    @classmethod
    def build(cls, config: Config, times: Mapping[str, Sequence[float]],
              median: Mapping[str, float] | None = None, baseline: Sequence[float] = ()) -> LabCell:
        """A cell with its dicts in ``layout_order``; medians default to the median of each layout's times."""
        keys = sorted(times, key=layout_order)
        given = median or {}
        return cls(**config.as_dict(), times={k: tuple(times[k]) for k in keys},
                   median={k: float(given[k]) if k in given else float(statistics.median(times[k])) for k in keys},
                   baseline_times=tuple(float(t) for t in baseline))

    @property
    def baseline(self) -> float | None:
        """The default layout's median time, or None when it was not measured for this configuration."""
        return float(statistics.median(self.baseline_times)) if self.baseline_times else None

    @property
    def layouts(self) -> tuple[str, ...]:
        return tuple(sorted(self.median, key=layout_order))

    def cell_like(self, key: str) -> CellConfig:
        """What ``model_time`` costs: this configuration under layout ``key``."""
        layout, g = parse_layout_key(key)
        return CellConfig(layout=layout, g=g, op=self.op, pattern=self.pattern, p=self.p, m=self.m,
                          request_size=self.request_size, requests_per_rank=self.requests_per_rank)


class LabCells(list[LabCell]):
    """The comparable configurations (two or more layouts), carrying the ones ``left_out`` because only one
    layout was measured for them (nothing to compare against): the report counts those, so a thin grid
    cannot pass unnoticed, from the same list the caller scores."""

    def __init__(self, cells: Iterable[LabCell] = (), left_out: Iterable[LabCell] = ()) -> None:
        super().__init__(cells)
        self.left_out: list[LabCell] = list(left_out)


def _config(c: Cell) -> Config:
    return Config(c.op, c.pattern, c.sharing, c.p, c.m, c.request_size, c.requests_per_rank)


def group_cells(measurements: Measurements) -> LabCells:
    """Measured cells by configuration, in ``Config.sort_key`` order; one-layout ones in ``.left_out``.

    A layout measured more than once for one configuration (merged reruns) has its repetitions pooled and
    its median taken over the pool; measured once, its median is the file's own (the statistic the fit
    used)."""
    by_config: dict[Config, dict[str, list[Cell]]] = {}
    for c in measurements.cells:
        by_config.setdefault(_config(c), {}).setdefault(layout_key(c.layout, c.g), []).append(c)
    base: dict[Config, list[float]] = {}
    for c in measurements.baseline:
        assert c.layout == BASELINE, c
        base.setdefault(_config(c), []).extend(c.times or (c.time,))
    cells: list[LabCell] = []
    left_out: list[LabCell] = []
    for config in sorted(by_config, key=Config.sort_key):
        runs = by_config[config]
        times = {k: tuple(t for c in cs for t in (c.times or (c.time,))) for k, cs in runs.items()}
        median = {k: cs[0].time for k, cs in runs.items() if len(cs) == 1}
        cell = LabCell.build(config, times, median, base.get(config, ()))
        (cells if len(runs) >= 2 else left_out).append(cell)
    return LabCells(cells, left_out)


def spread(times: Sequence[float]) -> float:
    """Relative spread of one layout's repetitions: (max − min) / median — the whole range, not the IQR,
    because with 3-5 repetitions one slow run is exactly what should show. 0 for identical times."""
    if not times:
        raise ValueError("no repetition times")
    lo, hi, mid = min(times), max(times), statistics.median(times)
    if hi == lo:
        return 0.0
    return (hi - lo) / mid if mid > 0 else math.inf


def _ranked(cell: LabCell) -> list[str]:
    if len(cell.median) < 2:
        raise ValueError(f"{cell.label()}: needs at least 2 layouts to compare (has {list(cell.median)})")
    return sorted(cell.layouts, key=lambda k: (cell.median[k], layout_order(k)))


def best(cell: LabCell) -> str:
    """The measured fastest layout (smallest median; ties → first in ``layout_order``)."""
    return _ranked(cell)[0]


def decisive(cell: LabCell, margin: float = MARGIN) -> bool:
    """Whether the winner is clear: runner-up's median > best's × (1 + margin). Exactly 3% is a tie."""
    first, second = _ranked(cell)[:2]
    return cell.median[second] > cell.median[first] * (1 + margin)


def predictions(cell: LabCell, servers: int, params: CostParams, variant: str = "corrected") -> dict[str, float]:
    """The model's seconds per repetition for each measured layout, in ``layout_order``."""
    return {k: model_time(cell.cell_like(k), servers, params, variant) for k in cell.layouts}


def realised_keys(cell: LabCell, servers: int) -> dict[str, str]:
    """Each measured layout's key as its requests realise it (``planner.classify.realised_as``: a request
    smaller than the strips touches fewer servers), for ``fastest``'s tie rule."""
    out = {}
    for k in cell.layouts:
        layout, g = parse_layout_key(k)
        got, gg = realised_as(layout, g, servers, cell.sharing, cell.request_size)
        out[k] = got if gg is None else f"{got}:{gg}"
    return out


def model_pick(cell: LabCell, servers: int, params: CostParams, variant: str = "corrected") -> str:
    """The layout the model would choose among those measured (ties → first in ``layout_order``, a layout
    realised as another measured one losing the tie to it, as the planner decides)."""
    return fastest(predictions(cell, servers, params, variant), realised_keys(cell, servers))


def _check_pick(cell: LabCell, pick: str) -> None:
    if pick not in cell.median:
        raise ValueError(f"{cell.label()}: pick {pick!r} was not measured (measured: {', '.join(cell.layouts)})")


def regret(cell: LabCell, pick: str) -> float:
    """median[pick] / best_median − 1: 0 for the best layout, 0.25 for one measured 25% slower."""
    _check_pick(cell, pick)
    b = cell.median[best(cell)]
    if b == 0:
        return 0.0 if cell.median[pick] == 0 else math.inf
    return cell.median[pick] / b - 1


def within(cell: LabCell, pick: str, margin: float = MARGIN) -> bool:
    """median[pick] ≤ best_median × (1 + margin): the same comparison as ``decisive`` (multiplied, not
    divided, so exactly 3% is within on both sides of the floating point)."""
    _check_pick(cell, pick)
    return cell.median[pick] <= cell.median[best(cell)] * (1 + margin)


@dataclass(frozen=True)
class Score:
    """How one chooser did on a grid. ``correct_decisive_rate`` is None when no cell was decisive (there
    was nothing to be right about); ``within_3pct`` is a rate over all cells."""

    cells: int
    decisive: int
    correct_decisive: int
    correct_decisive_rate: float | None
    within_3pct: float
    mean_regret: float
    worst_regret: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(cells: Sequence[LabCell], picks: Sequence[str], margin: float = MARGIN) -> Score:
    """Score ``picks[i]`` as the choice for ``cells[i]``."""
    if not cells:
        raise ValueError("no cells to score: the grid has no configuration measured for two or more layouts")
    if len(picks) != len(cells):
        raise ValueError(f"{len(picks)} picks for {len(cells)} cells")
    regrets = [regret(c, pk) for c, pk in zip(cells, picks)]
    clear = [(c, pk) for c, pk in zip(cells, picks) if decisive(c, margin)]
    correct = sum(pk == best(c) for c, pk in clear)
    return Score(
        cells=len(cells), decisive=len(clear), correct_decisive=correct,
        correct_decisive_rate=correct / len(clear) if clear else None,
        within_3pct=sum(within(c, pk, margin) for c, pk in zip(cells, picks)) / len(cells),
        mean_regret=sum(regrets) / len(regrets), worst_regret=max(regrets))


def baselines(cells: Sequence[LabCell], servers: int, variant: str = "corrected",
              margin: float = MARGIN) -> dict[str, Score]:
    """What the fitted model has to beat: the seeds' published parameters (``seed:ethernet``,
    ``seed:infiniband``) and always choosing one layout (``fixed:1-DH``, …) for every layout all cells
    measured — a fixed layout missing from some cell could not be scored there."""
    if not cells:
        raise ValueError("no cells to score: the grid has no configuration measured for two or more layouts")
    out = {f"seed:{name}": score(cells, [model_pick(c, servers, seed, variant) for c in cells], margin)
           for name, seed in SEEDS.items()}
    common = set(cells[0].median).intersection(*(c.median for c in cells[1:]))
    for key in sorted(common, key=layout_order):
        out[f"fixed:{key}"] = score(cells, [key] * len(cells), margin)
    return out


@dataclass(frozen=True)
class Gain:
    """How much faster the picks measured than the default layout: speed-up = default median / pick median
    per configuration, summarised by geometric means (the mean of ratios that compounds correctly: a 2×
    and a 0.5× cancel). ``best_geomean`` is the ceiling — the measured best layout in every cell."""

    cells: int  # configurations with the default layout measured
    geomean: float
    decisive: int
    geomean_decisive: float | None  # None when no such configuration was decisive
    best_geomean: float
    worst: float  # the smallest speed-up (below 1: the pick was slower than the default)
    worst_cell: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def geomean(xs: Sequence[float]) -> float:
    """The geometric mean of positive ratios (speed-ups), shared by the lab's and the hybrid's reports."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def speedup(cell: LabCell, pick: str) -> float | None:
    """default median / median[pick]; None without a default measurement (or a zero time either side)."""
    _check_pick(cell, pick)
    base, t = cell.baseline, cell.median[pick]
    return base / t if base and t > 0 else None


def gain(cells: Sequence[LabCell], picks: Sequence[str], margin: float = MARGIN) -> Gain | None:
    """The picks' speed-up over the default layout on the cells that measured it; None when none did."""
    if len(picks) != len(cells):
        raise ValueError(f"{len(picks)} picks for {len(cells)} cells")
    rows = [(c, x, speedup(c, best(c))) for c, pk in zip(cells, picks) if (x := speedup(c, pk)) is not None]
    if not rows:
        return None
    clear = [x for c, x, _ in rows if decisive(c, margin)]
    worst_cell, worst, _ = min(rows, key=lambda r: r[1])
    return Gain(cells=len(rows), geomean=geomean([x for _, x, _ in rows]), decisive=len(clear),
                geomean_decisive=geomean(clear) if clear else None,
                best_geomean=geomean([b for _, _, b in rows if b is not None]), worst=worst,
                worst_cell=worst_cell.label())


def human_size(n: int) -> str:
    """4096 → "4 KiB", 1048576 → "1 MiB" (exact multiples only; else bytes)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"
