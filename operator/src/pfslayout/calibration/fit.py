"""Fit e, v, α_seq, α_rand, β from measured cells by non-negative least squares.

Shared cores (issue 13, docs/cost-model.md "Shared cores"): ``fit`` first tries the column of ``e_shared``
(every message of a round, p·nt, costs CPU that clients and servers share) and keeps it when the grid
identifies it and the measurements pin it down above the bound 0; else the five-parameter form.

Per operation (issue 13): when the cells measure both reads and writes, writes may get their own e and β
(``e_write``, ``beta_write``). ``fit`` tries the split forms first — both terms, then e alone, then β
alone — and keeps the first whose write terms the grid identifies and the measurements pin down (not
poorly determined, not at the bound 0) without losing the identification of any term the five-parameter
form has; else the five-parameter form, with a warning saying why.

Small writes (issue 33, docs/cost-model.md "Small writes"): with the form chosen so far, ``fit`` then tries the
column of ``v_small_write`` (the bytes of writes split over two servers or more into pieces below OrangeFS's
small-I/O limit) and keeps it on the same terms as ``e_shared``: identified, positive, determined, and losing
no term.

Overlap (issue 33, docs/cost-model.md "Overlapped network and storage"): ``fit`` also fits the form in which
a request takes the larger of its network side (T_e + T_x) and its storage side (T_s + T_rw), by alternating
non-negative least squares over which side each cell is bound by, and keeps it when its residual is below the
sum's (by more than ``OVERLAP_GAIN``) without losing the identification of any term the sum identifies — and
only tries it when the sum's grid separates the two sides (not with one server, see ``_sides_confounded``).

Rows are weighted by 1/measured time by default, so the fit minimises *relative* error: a probe grid
spans milliseconds to seconds, and unweighted least squares would let the largest cells decide alone.
Columns are scaled to unit norm before ``scipy.optimize.nnls`` (v and β are ~1e-8 s/byte, e and α
~1e-4 s) and unscaled afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pfslayout.calibration.design import (
    NETWORK,
    PARAMS,
    Identifiability,
    columns,
    design_matrix,
    identifiability,
    network_columns,
    overlapped,
    shared_of,
    small_of,
    split_of,
    vector,
)
from pfslayout.calibration.measurements import Measurements
from pfslayout.costmodel import VARIANTS, CostParams
from pfslayout.errors import InputError

WEIGHTINGS = ("relative", "absolute")
# A fitted value whose standard error is at least this share of it is reported as poorly determined, not
# identified: the grid separates the term in principle, but these measurements pin it down no better than
# "somewhere between 0 and twice this" (the lab's noisy small cells do that to alpha terms).
POORLY_DETERMINED = 0.5


@dataclass
class FitResult:
    params: CostParams
    variant: str
    weighting: str
    servers: int
    r2: float | None  # of predicted vs measured times; None with fewer than 2 distinct measurements
    rmse: float  # seconds
    max_relative_error: float
    median_relative_error: float
    stderr: dict[str, float | None]  # linearised standard error per parameter (None when not identified)
    design: Identifiability
    at_bound: tuple[str, ...]  # identified parameters the non-negativity constraint pinned at 0
    measured: np.ndarray
    predicted: np.ndarray
    cells: list[Any]
    source_format: str = ""
    path: str = ""
    server_fits: list[Any] = field(default_factory=list)  # per_server.ServerFit, when per-server probes were given
    split_note: str = ""  # why writes did or did not get their own e/β
    shared_note: str = ""  # why the messages of a round were or were not charged for shared cores
    overlap_note: str = ""  # why a request's network and storage sides were or were not taken to overlap
    small_note: str = ""  # why small split writes were or were not charged per byte (v_small_write)
    objective: float = 0.0  # the fit's weighted sum of squared residuals (relative: Σ (residual/measured)²)

    @property
    def columns(self) -> tuple[str, ...]:
        """The fitted parameters: the five, then e_write/beta_write when writes got their own, then
        e_shared and v_small_write when the fit kept them."""
        return self.design.names

    @property
    def fit_r2(self) -> float | None:
        """R² in the fit's own weighting, what ``minRSquared`` judges: with relative weighting the R² of log
        times (the fit minimises relative error, so a cell of milliseconds counts as much as one of seconds),
        with absolute weighting ``r2``. None where undefined (fewer than 2 distinct times, or a prediction
        of 0 s)."""
        if self.weighting != "relative":
            return self.r2
        y, p = self.measured, self.predicted
        if len(y) < 2 or np.any(y <= 0) or np.any(p <= 0):
            return None
        ly = np.log(y)
        ss_tot = float(np.sum((ly - ly.mean()) ** 2))
        return None if ss_tot == 0 else 1.0 - float(np.sum((ly - np.log(p)) ** 2)) / ss_tot

    @property
    def network_bound(self) -> np.ndarray:
        """Per cell: whether its network side is the larger under the fitted parameters (what ``overlap``
        takes; every cell counts as network-bound in the summed form)."""
        if not self.params.overlap:
            return np.ones(len(self.cells), dtype=bool)
        cols = self.columns
        A = design_matrix(self.cells, self.servers, self.variant, split_of(self.params), shared_of(self.params),
                          small_of(self.params))
        x = vector(self.params, cols)
        net = network_columns(cols)
        return np.asarray(A[:, net] @ x[net] >= A[:, ~net] @ x[~net])

    @property
    def poorly_determined(self) -> tuple[str, ...]:
        """Identified, positive parameters whose standard error is comparable to the value."""
        values = self.params.scalars()
        return tuple(p for p in self.columns if p in self.design.identified and values[p] > 0
                     and (se := self.stderr.get(p)) is not None and se >= POORLY_DETERMINED * values[p])

    @property
    def determined(self) -> dict[str, bool]:
        """Per parameter: identified by the grid and pinned down by the measurements (what reports call
        "identified")."""
        poor = self.poorly_determined
        return {p: p in self.design.identified and p not in poor for p in self.columns}

    @property
    def warnings(self) -> list[str]:
        out = self.design.warnings()
        out += [f"{p}: fitted at the bound 0 — the measurements give this term no positive share; "
                "check the grid or the model's fit" for p in self.at_bound]
        values = self.params.scalars()
        out += [f"{p}: poorly determined — standard error {self.stderr[p]:.3g} is "
                f"{(self.stderr[p] or 0.0) / values[p]:.0%} of the value {values[p]:.3g}; more repetitions or "
                "requests per rank would narrow it" for p in self.poorly_determined]
        for server in self.server_fits:
            out += server.warnings
        return out

    def to_dict(self) -> dict[str, Any]:
        residual = self.measured - self.predicted
        # The five parameters sit at the top level so this document is itself a valid --params file
        # (CostParams ignores the other keys).
        params = self.params.model_dump(exclude_none=True)
        if "servers" in params:  # the CRD's status.params.servers items carry their index
            params["servers"] = [{"index": i, **s} for i, s in enumerate(params["servers"])]
        return {
            **params,
            "fit": {
                "variant": self.variant,
                "weighting": self.weighting,
                "servers": self.servers,
                "cells": len(self.cells),
                "r2": self.r2,
                "fit_r2": self.fit_r2,
                "rmse_s": self.rmse,
                "max_relative_error": self.max_relative_error,
                "median_relative_error": self.median_relative_error,
                "rank": self.design.rank,
                "condition": self.design.condition,
                "identified": self.determined,
                "poorly_determined": list(self.poorly_determined),
                "stderr": self.stderr,
                "per_operation": self.split_note,
                "shared_cores": self.shared_note,
                "overlap": self.overlap_note,
                "small_writes": self.small_note,
                **({"servers": [s.quality() for s in self.server_fits]} if self.server_fits else {}),
            },
            "warnings": self.warnings,
            "cells": [
                {
                    "source": c.source, "layout": c.layout, "g": c.g, "op": c.op, "pattern": c.pattern,
                    "p": c.p, "m": c.m, "request_size": c.request_size, "requests_per_rank": c.requests_per_rank,
                    "measured_s": float(meas), "predicted_s": float(pred), "residual_s": float(res),
                    "relative_error": float(res / meas) if meas > 0 else None,
                }
                for c, meas, pred, res in zip(self.cells, self.measured, self.predicted, residual)
            ],
            "source": {"format": self.source_format, "path": self.path},
        }


def fit(measurements: Measurements, *, variant: str = "corrected", weighting: str = "relative",
        per_server: dict[int, Measurements] | None = None) -> FitResult:
    """The global fit (per operation where the measurements support it, see the module's docstring); with
    ``per_server`` ({server index: that server's pinned probe}) also each server's α_seq, α_rand and β with e
    and v held at the global values (``pfslayout.calibration.per_server``)."""
    # The structure first (per-operation and shared-core terms, summed or overlapped), then the small-write
    # refinement of the chosen form: tried before the overlap decision, it let a summed form with
    # v_small_write beat the overlapped one on the 8-server loop and lose 6 of its 26 decisive cells.
    result = _with_overlap(_fit_per_op(measurements, variant=variant, weighting=weighting), measurements,
                           variant=variant, weighting=weighting)
    result = _with_small(result, measurements, variant=variant, weighting=weighting)
    if per_server:
        from pfslayout.calibration.per_server import fit_server, with_servers

        result.server_fits = [fit_server(i, result.params, per_server[i], variant=variant, weighting=weighting)
                              for i in sorted(per_server)]
        result.params = with_servers(result.params, result.server_fits, measurements.servers)
    return result


# The overlapped form is kept when its residual (the fit's objective) is more than this share below the sum's:
# both forms have the same parameters, so the one that explains the calibration better wins and a tie keeps
# the seeds' sum. It was 0.2 (the product loop's first two setups: 45% and 57% below) until the 8-server
# loop calibrated with the `standard` grid came out only 5% below: the sum it kept picked 19 of 23 decisive
# held-out cells, the overlapped form from the same cells 23 of 23 — the in-sample margin did not predict
# which form chooses better, and on every product-loop report the overlapped form chose at least as well.
OVERLAP_GAIN = 0.0


def _with_overlap(summed: FitResult, measurements: Measurements, *, variant: str, weighting: str) -> FitResult:
    """The overlapped fit when it explains the measurements better (see the module's docstring), else
    ``summed``; ``overlap_note`` says which and why."""
    if variant != "corrected":  # ``printed`` is 003's table as printed, sum included
        summed.overlap_note = "network and storage add up (the printed variant is 003 as printed)"
        return summed
    if mixed := _sides_confounded(summed):
        summed.overlap_note = ("network and storage add up (the grid cannot tell the two sides apart, it "
                               f"determines only {' and '.join(mixed)}: probe with at least 2 servers)")
        return summed
    trial = _fit_per_op(measurements, variant=variant, weighting=weighting, overlap=True)
    gain = 1.0 - trial.objective / summed.objective if summed.objective > 0 else 0.0
    lost = _lost(summed, trial)
    if gain <= OVERLAP_GAIN or lost:
        why = (f"{', '.join(lost)} would no longer be identified" if lost else
               f"the overlapped form's residual is {-gain:.0%} above the sum's" if gain < 0 else
               f"the overlapped form's residual is only {gain:.0%} below the sum's (it must be more than "
               f"{OVERLAP_GAIN:.0%})")
        summed.overlap_note = f"network and storage add up ({why})"
        return summed
    net = trial.network_bound
    trial.overlap_note = (f"network and storage overlap: each request takes the larger side (residual {gain:.0%} "
                          f"below the sum's; {int(net.sum())} cells network-bound, {int((~net).sum())} storage-bound)")
    return trial


def _sides_confounded(summed: FitResult) -> list[str]:
    """The sum's confounded groups that mix a network-side term with a storage-side one. When the grid cannot
    separate the two sides (one server: e with α, v with β), which side bounds a cell is decided by where the
    noise puts the kink of the max, not by the measurements: a one-server POSIX probe chose the overlapped
    form in 12 of 16 runs (residual up to 9% below the sum's) and then reported e and v identified."""
    net = set(NETWORK)
    return ["+".join(group) for group in summed.design.confounded
            if any(c in net for c in group) and not all(c in net for c in group)]


SPLITS: tuple[tuple[str, ...], ...] = (("e", "beta"), ("e",), ("beta",))
# A write term is kept only when it differs from the read term by more than this many standard errors of
# the difference: measurements that do not tell the operations apart keep the five-parameter form.
SEPARATION = 2.0


def _differs(trial: FitResult, p: str) -> bool:
    read, write = getattr(trial.params, p), getattr(trial.params, p + "_write")
    se_r, se_w = trial.stderr.get(p), trial.stderr.get(p + "_write")
    if se_r is None or se_w is None:
        return False
    return bool(abs(write - read) > SEPARATION * float(np.hypot(se_r, se_w)))


def _lost(base: FitResult, trial: FitResult) -> list[str]:
    """Terms ``base`` identifies that ``trial`` does not: a new column must not be bought with them (seen on
    a real node: e_write taken, the design's rank stayed 5 of 6 columns)."""
    return [p for p in base.design.identified if p not in trial.design.identified]


def _not_kept(base: FitResult, trial: FitResult, name: str) -> str:
    """Why ``trial``'s added column ``name`` is not kept (empty when it is): it must be identified, positive and
    determined, cost no term ``base`` identifies, and leave the design at full rank."""
    return ("the grid does not identify it" if name not in trial.design.identified else
            "the measurements give it no positive share" if name in trial.at_bound else
            "poorly determined" if name in trial.poorly_determined else
            f"{', '.join(lost)} would no longer be identified" if (lost := _lost(base, trial)) else
            f"the design's rank is {trial.design.rank} of {len(trial.design.names)} columns"
            if trial.design.rank < len(trial.design.names) else "")


def _with_shared(five: FitResult, measurements: Measurements, *, variant: str, weighting: str,
                 overlap: bool = False) -> FitResult:
    """The fit with ``e_shared`` when the measurements determine it (see the module's docstring), else ``five``;
    ``shared_note`` says which and why."""
    trial = _fit_global(measurements, variant=variant, weighting=weighting, shared=True, overlap=overlap)
    if why := _not_kept(five, trial, "e_shared"):
        five.shared_note = f"messages not charged for shared cores (e_shared: {why})"
        return five
    trial.shared_note = _shared_kept(trial)
    return trial


def _shared_kept(result: FitResult) -> str:
    """The note of a fit that kept e_shared, with the value it published."""
    return (f"every message of a round also costs e_shared = {result.params.e_shared:.3g} s (clients and servers "
            "share cores)")


def _split_kept(result: FitResult, split: tuple[str, ...]) -> str:
    """The note of a fit that gave writes their own ``split`` terms, with the values it published."""
    return "writes have their own " + " and ".join(split) + " (" + ", ".join(
        _ratio(getattr(result.params, p + "_write"), getattr(result.params, p), p) for p in split) + ")"


def _ratio(write: float, read: float, name: str) -> str:
    """How a write term compares with the read term, for the notes (a read e may be 0: see ``free``)."""
    return f"{name}_write/{name} = {write / read:.3g}" if read > 0 else f"{name}_write = {write:.3g}, {name} = 0"


def _with_small(base: FitResult, measurements: Measurements, *, variant: str, weighting: str) -> FitResult:
    """``base`` with the column of ``v_small_write`` when the measurements determine it (see the module's
    docstring); ``small_note`` says whether and why."""
    split, shared = split_of(base.params), shared_of(base.params)
    column = design_matrix(measurements.cells, measurements.servers, variant, split, shared, small=True)[:, -1]
    if not np.any(column):
        base.small_note = "small split writes not charged (no cell writes pieces below the small-I/O limit over " \
                          "two servers or more)"
        return base
    trial = _fit_global(measurements, variant=variant, weighting=weighting, split=split, shared=shared,
                        small=True, overlap=bool(base.params.overlap))
    if why := _not_kept(base, trial, "v_small_write"):
        base.small_note = f"small split writes not charged (v_small_write: {why})"
        return base
    # the new column refits every column: kept terms are said with the values this fit publishes
    trial.split_note = _split_kept(trial, split) if split else base.split_note
    trial.shared_note = _shared_kept(trial) if shared else base.shared_note
    trial.overlap_note = base.overlap_note  # the form was chosen before: the column does not change it
    trial.small_note = (f"writes split into pieces below the small-I/O limit also cost v_small_write = "
                        f"{trial.params.v_small_write:.3g} s per byte of all ranks' data")
    return trial


def _fit_per_op(measurements: Measurements, *, variant: str, weighting: str, overlap: bool = False) -> FitResult:
    five = _fit_global(measurements, variant=variant, weighting=weighting, overlap=overlap)
    base = _with_shared(five, measurements, variant=variant, weighting=weighting, overlap=overlap)
    shared = base.params.e_shared is not None
    ops = {c.op for c in measurements.cells}
    if ops != {"read", "write"}:
        base.split_note = "one value per term for both operations: the cells measure only " + ", ".join(sorted(ops))
        return base
    rejected = []
    for split in SPLITS:
        trial = _fit_global(measurements, variant=variant, weighting=weighting, split=split, shared=shared,
                            overlap=overlap)
        # the split refits every column: a kept e_shared is said with the value this fit publishes
        trial.shared_note = _shared_kept(trial) if shared else base.shared_note
        mine = [f"{p}_write" for p in split] + list(split)
        poor = set(trial.poorly_determined)
        # A read e at or near 0 (at the bound, or poorly determined: consistent with 0) is no defect when
        # e_shared is fitted: the shared term then carries the whole cost of a read's messages and e_write what
        # a write's cost beyond it (seen on kind, issue 33).
        free = {"e"} if shared and trial.params.e_shared else set()
        bad = [p for p in mine if p not in trial.design.identified
               or ((p in poor or p in trial.at_bound) and p not in free)]
        bad += [p for p in _lost(base, trial) if p not in bad]
        # Nor with a rank-deficient design whose dependent direction the confounding search misses (seen
        # again on a loaded real node: e_write taken at rank 5 of 6, alpha_rand and beta then undetermined).
        deficient = trial.design.rank < len(trial.design.names)
        same = [p for p in split if not bad and not deficient and not _differs(trial, p)]
        if not bad and not deficient and not same:
            trial.split_note = _split_kept(trial, split)
            return trial
        why = (f"{', '.join(bad)} not determined" if bad else
               f"the design's rank is {trial.design.rank} of {len(trial.design.names)} columns" if deficient else
               f"{', '.join(p + '_write' for p in same)} within {SEPARATION:g} standard errors of the read value")
        rejected.append(f"{'+'.join(split)}: {why}")
    base.split_note = ("one value per term for both operations; per-operation fits rejected ("
                       + "; ".join(rejected) + ")")
    return base


def _fit_global(measurements: Measurements, *, variant: str, weighting: str, split: tuple[str, ...] = (),
                shared: bool = False, small: bool = False, overlap: bool = False) -> FitResult:
    if variant not in VARIANTS:
        raise InputError("--variant", f"unknown variant {variant!r}", f"use one of {', '.join(VARIANTS)}")
    if weighting not in WEIGHTINGS:
        raise InputError("weighting", f"unknown weighting {weighting!r}", f"use one of {', '.join(WEIGHTINGS)}")
    cells = measurements.cells
    if not cells:
        raise InputError(measurements.path or "measurements", "has no cells", "measure at least one grid cell")
    y = np.array([c.time for c in cells], dtype=np.float64)
    if weighting == "relative":
        bad = y <= 0
        if np.any(bad):
            c = cells[int(np.argmax(bad))]
            raise InputError(f"{measurements.path}: {c.source}", f"measured time is {c.time}, relative weighting "
                             "needs positive times", "re-measure the cell with more requests per rank")
        w = 1.0 / y
    else:
        w = np.ones_like(y)
    cols = columns(split, shared, small)
    A = design_matrix(cells, measurements.servers, variant, split, shared, small)
    Aw = A * w[:, None]
    scale = np.linalg.norm(Aw, axis=0)
    scale[scale == 0] = 1.0
    if overlap:
        # The rows as fitted: each cell's bound side only (the other side's columns do not move its time).
        xs, Aw = _fit_overlapped(Aw / scale, y * w, network_columns(cols))
        Aw = Aw * scale
        x = xs / scale
        predicted = overlapped(A, x, network_columns(cols))
    else:
        xs = _nnls(Aw / scale, y * w)
        x = xs / scale
        predicted = A @ x
    design = identifiability(Aw, names=cols)
    residual = y - predicted
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = None if len(y) < 2 or ss_tot == 0 else 1.0 - float(np.sum(residual**2)) / ss_tot
    rel = np.abs(residual) / np.where(y > 0, y, np.nan)
    identified = set(design.identified)
    stderr = _stderr(Aw / scale, y * w - (Aw / scale) @ xs, scale, identified, cols)
    values: dict[str, Any] = {p: float(v) for p, v in zip(cols, x)}
    params = CostParams.model_validate(values | ({"overlap": True} if overlap else {}))
    at_bound = tuple(p for p, v in zip(cols, x) if p in identified and v == 0.0)
    return FitResult(params=params, variant=variant, weighting=weighting, servers=measurements.servers, r2=r2,
                     rmse=float(np.sqrt(np.mean(residual**2))),
                     max_relative_error=float(np.nanmax(rel)) if np.any(np.isfinite(rel)) else float("nan"),
                     median_relative_error=float(np.nanmedian(rel)) if np.any(np.isfinite(rel)) else float("nan"),
                     stderr=stderr, design=design, at_bound=at_bound, measured=y, predicted=predicted,
                     cells=list(cells), source_format=measurements.source_format, path=measurements.path,
                     objective=float(np.sum((residual * w) ** 2)))


def _nnls(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.optimize import nnls  # here: scipy costs the operator ~40 MB until a fit runs

    x, _ = nnls(M, b, maxiter=50 * M.shape[1])
    return np.asarray(x)


def _fit_overlapped(M: np.ndarray, b: np.ndarray, net: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative x minimising ||max(M[:, net] x, M[:, ~net] x) − b|| (rows: cells, weighted; columns
    scaled) by alternating: given which side bounds each row, the problem is linear (the other side's
    columns zeroed in that row); refit, reassign, until the assignment holds. Started from the summed fit
    and from every row on one side, the best end point is kept. Returns x and the rows as last fitted."""
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    starts = [_nnls(M, b), _nnls(M * net, b) + _nnls(M * ~net, b)]
    for x in starts:
        side = np.asarray(M[:, net] @ x[net] >= M[:, ~net] @ x[~net])
        E = np.where(side[:, None], M * net, M * ~net)
        for _ in range(50):
            x = _nnls(E, b)
            new_side = np.asarray(M[:, net] @ x[net] >= M[:, ~net] @ x[~net])
            if np.array_equal(new_side, side):
                break
            side = new_side
            E = np.where(side[:, None], M * net, M * ~net)
        err = float(np.sum((overlapped(M, x, net) - b) ** 2))
        if best is None or err < best[0]:
            best = (err, x, E)
    assert best is not None
    return best[1], best[2]


def _stderr(As: np.ndarray, res: np.ndarray, scale: np.ndarray, identified: set[str],
            names: tuple[str, ...] = PARAMS) -> dict[str, float | None]:
    """Ordinary least-squares standard errors at the solution (ignoring the bound), per identified
    parameter; None when not identified or when there are no residual degrees of freedom."""
    out: dict[str, float | None] = dict.fromkeys(names)
    cols = [j for j, p in enumerate(names) if p in identified]
    dof = As.shape[0] - len(cols)
    if not cols or dof <= 0:
        return out
    sub = As[:, cols]
    sigma2 = float(res @ res) / dof
    try:
        cov = np.linalg.inv(sub.T @ sub) * sigma2
    except np.linalg.LinAlgError:
        return out
    for k, j in enumerate(cols):
        out[names[j]] = float(np.sqrt(max(cov[k, k], 0.0)) / scale[j])
    return out
