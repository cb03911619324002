"""The lab's report: one JSON-ready dict per run (scores, baselines and every cell's evidence), its PNG of
measured vs predicted winners, and the Markdown section ``docs/results.md`` quotes.

The dict is the single source: the PNG and the Markdown are drawn from it alone, so a committed
``report.json`` can be re-plotted or re-quoted later without re-running the lab.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pfslab.score import (
    MARGIN,
    Config,
    LabCell,
    LabCells,
    baselines,
    best,
    decisive,
    fastest,
    gain,
    human_size,
    layout_order,
    predictions,
    realised_keys,
    regret,
    score,
    speedup,
    spread,
    within,
)
from pfslayout.costmodel import CostParams

# Colour-blind safe (Okabe-Ito) and one marker per layout, so a pick reads by shape as well as colour.
_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_MARKERS = ("o", "D", "^", "v", "P", "X", "*", "h")


def build_report(cells: Sequence[LabCell], servers: int, params: CostParams, setup: Mapping[str, Any],
                 variant: str = "corrected", *, left_out: Sequence[LabCell] | None = None,
                 margin: float = MARGIN) -> dict[str, Any]:
    """Score ``params`` (the fitted parameters) on ``cells`` beside the baselines.

    ``setup`` (servers, rate, client namespaces, OrangeFS version, commit) is copied through as given;
    only ``servers`` is checked against the argument, because a report scored for another server count
    than it claims would be silently wrong. ``left_out`` defaults to the one-layout configurations
    ``group_cells`` set aside (``cells.left_out``); the report gives their count.

    Each ``per_cell`` entry is flat: the configuration's fields, then per-layout dicts (``median``,
    ``spread``, ``times``, ``predicted``) keyed like ``LabCell``'s, then the verdict."""
    if left_out is None:
        left_out = cells.left_out if isinstance(cells, LabCells) else []
    setup = dict(setup)
    if setup.setdefault("servers", servers) != servers:
        raise ValueError(f"setup says servers={setup['servers']} but the cells were scored for servers={servers}")
    per_cell: list[dict[str, Any]] = []
    picks: list[str] = []
    for cell in cells:
        predicted = predictions(cell, servers, params, variant)
        pick = fastest(predicted, realised_keys(cell, servers))
        picks.append(pick)
        per_cell.append({
            **cell.as_dict(),
            "median": {k: cell.median[k] for k in cell.layouts},
            "spread": {k: spread(cell.times[k]) for k in cell.layouts},
            "times": {k: list(cell.times[k]) for k in cell.layouts},
            "predicted": predicted,
            "best": best(cell),
            "decisive": decisive(cell, margin),
            "pick": pick,
            "regret": regret(cell, pick),
            "within_3pct": within(cell, pick, margin),
            # the file system's default layout, measured beside the model's (None when it was not)
            "default": cell.baseline,
            "speedup": speedup(cell, pick),
        })
    fitted = score(cells, picks, margin)  # raises on no cells, before the baselines would
    over_default = gain(cells, picks, margin)
    return {
        **fitted.as_dict(),
        "setup": setup,
        # the five values plus the variant; CostParams ignores the extra key, so this block loads back as params
        "params": {**params.scalars(), **({"overlap": True} if params.overlap else {}), "variant": variant},
        "baselines": {name: s.as_dict() for name, s in baselines(cells, servers, variant, margin).items()},
        "left_out": len(left_out),
        "gain": over_default.as_dict() if over_default else None,
        "per_cell": per_cell,
        # every pick more than 3% slower than the best: which cell, and why (why_missed)
        "misses": [{"cell": config_label(r), "best": r["best"], "pick": r["pick"], "regret": r["regret"],
                    "decisive": r["decisive"], "why": why_missed(r, per_cell)}
                   for r in per_cell if not r["within_3pct"]],
    }


TWIN_KEYS = ("op", "sharing", "p", "m", "request_size")  # a configuration but its access pattern


def why_missed(row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], pick_key: str = "pick") -> str:
    """Why the pick of a report row (``pick_key``) is not its measured best, in one sentence: either the same
    configuration with the other access pattern measured that pick best while the model ranks the two alike
    (so no model that ranks them alike can be right in both: the measurements disagree), or by how much the
    model's predictions of the pick and of the best were off."""
    best, pick = row["best"], row[pick_key]
    med, pred = row["median"], row["predicted"]
    twin = next((r for r in rows if r is not row and r["pattern"] != row["pattern"]
                 and all(r[k] == row[k] for k in TWIN_KEYS)), None)
    if twin is not None and twin["best"] == pick and twin[pick_key] == pick and best in twin["median"]:
        ahead = twin["median"][best] / twin["median"][pick] - 1
        return (f"the same configuration with {twin['pattern']} access measured {pick} best ({best} {ahead:+.0%}); "
                f"the model ranks the two alike, so no pick is right in both — the measurements disagree")
    off = {k: pred[k] / med[k] - 1 for k in (pick, best)}
    return (f"predicted {pick} {pred[pick] * 1e3:.3g} ms, {best} {pred[best] * 1e3:.3g} ms; measured "
            f"{med[pick] * 1e3:.3g} ms and {med[best] * 1e3:.3g} ms ({pick} {off[pick]:+.0%}, {best} {off[best]:+.0%})")


def write_report(report: Mapping[str, Any], json_path: str | Path) -> Path:
    """Write the report as indented JSON (diffable when committed) and return its path."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------- figure


def _panel_key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return row["op"], row["pattern"], row["sharing"]


def _column_key(row: Mapping[str, Any]) -> tuple[int, int, int]:
    return row["p"], row["m"], row["requests_per_rank"]


def plot_winners(report: Mapping[str, Any], png_path: str | Path) -> Path:
    """A PNG of measured vs predicted winners: one panel per (op, pattern, sharing), columns (p, m),
    rows request size. Each cell is a square in the measured winner's colour — filled when decisive,
    hollow when undecided (within 3%) — with the model's pick as an inner marker in the pick's colour
    and shape; misses (pick more than 3% slower) are labelled with their regret."""
    rows: list[Mapping[str, Any]] = list(report["per_cell"])
    if not rows:
        raise ValueError("the report has no cells to plot")
    # Lazy: matplotlib costs ~0.5 s to import and only this function needs it. Figure + the Agg canvas,
    # not pyplot, so no global backend is switched under a caller that uses another one.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    layouts = sorted({k for r in rows for k in r["median"]}, key=layout_order)
    colour = {k: _COLOURS[i % len(_COLOURS)] for i, k in enumerate(layouts)}
    marker = {k: _MARKERS[i % len(_MARKERS)] for i, k in enumerate(layouts)}
    panels = sorted({_panel_key(r) for r in rows})
    columns = sorted({_column_key(r) for r in rows})  # shared by every panel so panels line up
    sizes = sorted({r["request_size"] for r in rows})
    several_k = len({k for _, _, k in columns}) > 1

    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    width = max(4.5, 0.75 * len(columns) + 1.8)
    height = max(2.8, 0.6 * len(sizes) + 1.6)
    legend_width = 2.1 * (len(layouts) + 1)  # the legend below must fit: one column per layout, one for the cues
    fig = Figure(figsize=(max(ncols * width, legend_width), nrows * height + 1.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        for r in (r for r in rows if _panel_key(r) == panel):
            x, y = columns.index(_column_key(r)), sizes.index(r["request_size"])
            win, pick = r["best"], r["pick"]
            ax.scatter([x], [y], marker="s", s=420, linewidths=2, edgecolors=colour[win],
                       facecolors=colour[win] if r["decisive"] else "white", zorder=2)
            ax.scatter([x], [y], marker=marker[pick], s=70, c=colour[pick], edgecolors="black", linewidths=0.8,
                       zorder=3)
            if not r["within_3pct"]:
                ax.annotate(f"+{r['regret']:.0%}", (x, y), xytext=(0, -17), textcoords="offset points",
                            ha="center", va="top", fontsize=7, color="#B00000")
        ax.set_xticks(range(len(columns)),
                      [f"{p}\nm={m}" + (f"\n×{k}" if several_k else "") for p, m, k in columns], fontsize=8)
        ax.set_yticks(range(len(sizes)), [human_size(s) for s in sizes], fontsize=8)
        ax.set_xlim(-0.6, len(columns) - 0.4)
        ax.set_ylim(-0.7, len(sizes) - 0.4)
        ax.set_xlabel("processes p (ranks per node m)", fontsize=8)
        ax.set_ylabel("request size", fontsize=8)
        ax.set_title(", ".join(panel), fontsize=9)
        ax.grid(False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)

    # One legend column per layout (its measured square above its pick marker), then the two cues.
    handles: list[Line2D] = []
    for k in layouts:
        handles.append(Line2D([], [], marker="s", linestyle="", markersize=10, markerfacecolor=colour[k],
                              markeredgecolor=colour[k], label=f"{k} measured best"))
        handles.append(Line2D([], [], marker=marker[k], linestyle="", markersize=7, markerfacecolor=colour[k],
                              markeredgecolor="black", label=f"{k} model's pick"))
    handles.append(Line2D([], [], marker="s", linestyle="", markersize=10, markerfacecolor="white",
                          markeredgecolor="grey", markeredgewidth=2, label="hollow: undecided (within 3%)"))
    handles.append(Line2D([], [], marker="$+\\%$", linestyle="", markersize=12, color="#B00000",
                          label="regret of a miss (pick > 3% slower)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(layouts) + 1, fontsize=8, frameon=False)
    rate = report.get("correct_decisive_rate")
    fig.suptitle(f"Measured winner (square) vs model's pick (inner marker)\ncorrect on "
                 f"{report['correct_decisive']}/{report['decisive']} decisive cells"
                 + (f" ({rate:.0%})" if rate is not None else ""), fontsize=10)
    path = Path(png_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


# ------------------------------------------------------------------------------------------- markdown


def _pct(x: float | None) -> str:
    if x is None:
        return "—"
    return "∞" if math.isinf(x) else f"{x:.1%}"


def _score_row(name: str, s: Mapping[str, Any]) -> str:
    rate = s["correct_decisive_rate"]
    correct = f"{s['correct_decisive']}/{s['decisive']}" + (f" ({_pct(rate)})" if rate is not None else "")
    return (f"| {name} | {correct} | {_pct(s['within_3pct'])} | {_pct(s['mean_regret'])} "
            f"| {_pct(s['worst_regret'])} |")


def config_label(row: Mapping[str, Any]) -> str:
    return Config(**{k: row[k] for k in Config.__dataclass_fields__}).label()


def _calibration_line(cal: Any) -> list[str]:
    """How the scored parameters were fitted, when the setup says (the lab's own calibration does)."""
    if not isinstance(cal, Mapping):
        return []
    r2 = cal.get("r2")
    poor = cal.get("poorly_determined") or []
    text = f"Calibration: {cal.get('cells')} probe cells, R² {r2:.3f}" if isinstance(r2, float) else \
        f"Calibration: {cal.get('cells')} probe cells"
    return [text + (f"; poorly determined: {', '.join(poor)}" if poor else "") + ".", ""]


def section_head(title: str, command: str, setup: Mapping[str, Any]) -> list[str]:
    """The opening lines every lab section of docs/results.md shares: title with the setup, the command
    that produced it, and the setup's scalar fields."""
    return [
        f"## {title} {setup.get('servers')} servers at {setup.get('rate')}, "
        f"{setup.get('client_namespaces')} client namespaces",
        "",
        "Produced by:",
        "",
        "```sh",
        command,
        "```",
        "",
        "Setup: " + "; ".join(f"{k} {v}" for k, v in setup.items() if not isinstance(v, Mapping)) + ".",
        "",
    ]


def gain_line(g: Mapping[str, Any] | None, who: str = "the pick") -> str:
    """One sentence on the picks' speed-up over the file system's default layout (empty without one)."""
    if not g:
        return ""
    decisive = (f", {g['geomean_decisive']:.2f}× on the {g['decisive']} decisive ones"
                if g.get("geomean_decisive") is not None else "")
    return (f"Against the file system's default layout (simple_stripe, 64 KiB strips, every server), {who} "
            f"measured {g['geomean']:.2f}× faster (geometric mean over {g['cells']} configurations{decisive}; "
            f"the measured best layout would give {g['best_geomean']:.2f}×); worst cell {g['worst']:.2f}× "
            f"({g['worst_cell']}).")


def results_markdown(report: Mapping[str, Any], command: str) -> str:
    """A ``docs/results.md`` section: the command, the setup, the fitted model against the baselines, and
    every cell where the model's pick measured more than 3% slower than the best (its misses)."""
    setup = report["setup"]
    params = report["params"]
    fitted_name = f"fitted ({params.get('variant', 'corrected')})"
    lines = [
        *section_head("Does the model pick the measured best layout?", command, setup),
        *_calibration_line(setup.get("calibration")),
        # the fitted terms as build_report stored them (CostParams.scalars), in its order
        "Fitted parameters: " + ", ".join(f"{k} = {v:.4g}" for k, v in params.items()
                                          if k not in ("variant", "overlap"))
        + ("; network and storage overlap (each request takes the larger side)" if params.get("overlap") else "")
        + ".",
        "",
        f"{report['cells']} configurations scored, {report['decisive']} with a decisive winner (more than "
        f"{MARGIN:.0%} ahead of the runner-up); {report['left_out']} measured for one layout only "
        "were left out.",
        "",
        "| model | correct on decisive | within 3% | mean regret | worst regret |",
        "|---|---|---|---|---|",
        _score_row(f"**{fitted_name}**", report),
        *(_score_row(name, s) for name, s in report["baselines"].items()),
        "",
    ]
    if line := gain_line(report.get("gain")):
        lines += [line, ""]
    misses = [r for r in report["per_cell"] if not r["within_3pct"]]
    if not misses:
        lines += ["No misses: the fitted model's pick was within 3% of the best in every configuration.", ""]
        return "\n".join(lines)
    lines += [
        f"Misses ({len(misses)}): the fitted model's pick measured more than 3% slower than the best.",
        "",
        "| configuration | best | pick | regret | why |",
        "|---|---|---|---|---|",
        *(f"| {config_label(r)} | {r['best']} | {r['pick']} | +{_pct(r['regret'])} | "
          f"{why_missed(r, report['per_cell'])} |" for r in misses),
        "",
    ]
    return "\n".join(lines)


def replace_marked(path: Path, begin: str, end: str, body: str) -> None:
    """Put ``body`` between the markers ``begin`` and ``end`` in ``path`` (appended with them when absent)."""
    text = path.read_text() if path.exists() else "# Results\n"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
