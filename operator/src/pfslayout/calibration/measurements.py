"""Measured cells for the fit, from pfsprobe's JSON (docs/probe-format.md) or IOR's JSON output
(``ior -O summaryFormat=JSON``). Both are validated strictly; every problem is one ``InputError`` naming
the file and the field path, e.g. ``probe.json: cells[3].request_size``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pfslayout.calibration.design import CellConfig
from pfslayout.costmodel import LAYOUTS
from pfslayout.errors import InputError

PROBE_FORMAT = "pfsprobe/1"
MEASUREMENT_FORMATS = ("probe", "ior")
# pfsprobe's word for the file system's own layout (nothing passed at create): measured as the baseline the
# model's picks are compared with, never fitted and never a candidate (issue 33)
BASELINE = "default"


@dataclass(frozen=True)
class Cell(CellConfig):
    """One measured configuration: the model's inputs and the time of one repetition (seconds)."""

    time: float  # the statistic fitted: the median over repetitions
    times: tuple[float, ...] = ()
    source: str = ""  # field path of the cell in its file, for messages and the per-cell report
    sharing: str = "file-per-process"


@dataclass
class Measurements:
    servers: int
    cells: list[Cell]
    source_format: str
    path: str = ""
    platform: dict[str, Any] = field(default_factory=dict)
    # cells measured on the file system's default layout (layout ``BASELINE``): apart from ``cells``, so the
    # fit and every chooser see only the model's layouts, while a report can say what a pick gained
    baseline: list[Cell] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- probe


class _Platform(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    ranks: int = Field(ge=1)
    nodes: int = Field(ge=1)
    ranks_per_node: int = Field(ge=1)
    servers: int = Field(ge=1)
    backend: Literal["posix", "mpiio", "pvfs2"]


class _ProbeCell(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    layout: Literal["1-DH", "1-DV", "2-D", "default"]
    g: int | None = Field(ge=1)
    target: str
    op: Literal["read", "write"]
    pattern: Literal["sequential", "random"]
    sharing: Literal["file-per-process", "shared"]
    p: int = Field(ge=1)
    m: int = Field(ge=1)
    request_size: int = Field(ge=1)
    requests_per_rank: int = Field(ge=1)
    repetitions: int = Field(ge=1)
    times: list[float] = Field(min_length=1)
    median: float = Field(ge=0)
    min: float = Field(ge=0)
    max: float = Field(ge=0)
    iqr: float = Field(ge=0)


class _ProbeDoc(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    format: Literal["pfsprobe/1"]
    tool: dict[str, Any]
    started: str
    platform: _Platform
    cells: list[_ProbeCell] = Field(min_length=1)


def field_path(loc: tuple[Any, ...]) -> str:
    """('cells', 3, 'request_size') → 'cells[3].request_size'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "document"


def _problem(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a field of this format"
    if kind == "literal_error":
        return f"{err['msg'][0].lower()}{err['msg'][1:]} (got {err.get('input')!r})"
    msg = str(err["msg"])
    return f"{msg[0].lower()}{msg[1:]} (got {err.get('input')!r})"


def _read_json(path: Path, flag: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(flag, f"file {path} does not exist", "pass pfsprobe's or IOR's JSON output") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "is not UTF-8 text", "pass pfsprobe's or IOR's JSON output") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}:{err.lineno}", f"is not valid JSON ({err.msg})", "fix the JSON syntax") from None


def parse_probe(doc: Any, path: str = "probe") -> Measurements:
    """Validate a pfsprobe/1 document and turn its cells into ``Cell``s (median time per cell)."""
    if not isinstance(doc, dict):
        raise InputError(f"{path}: document", "must be a JSON object", f"pass a {PROBE_FORMAT} document")
    if doc.get("format") != PROBE_FORMAT:
        raise InputError(f"{path}: format", f"must be {PROBE_FORMAT!r} (got {doc.get('format')!r})",
                         "pass pfsprobe's output, or --format ior for IOR's JSON")
    try:
        probe = _ProbeDoc.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(f"{path}: {field_path(first['loc'])}", _problem(dict(first))) from None
    plat = probe.platform
    n = plat.servers
    cells: list[Cell] = []
    baseline: list[Cell] = []
    for i, c in enumerate(probe.cells):
        where = f"cells[{i}]"

        def bad(name: str, problem: str, fix: str | None = None, where: str = where) -> InputError:
            return InputError(f"{path}: {where}.{name}", problem, fix)

        if c.layout == "2-D":
            if c.g is None:
                raise bad("g", "is required for layout 2-D", f"give the 2-D group count (1..{n})")
            if c.g > n:
                raise bad("g", f"is {c.g}, more than platform.servers={n}", "g groups need at least g servers")
        elif c.g is not None:
            raise bad("g", f"must be null for layout {c.layout} (got {c.g})")
        if c.m > c.p:
            raise bad("m", f"is {c.m}, more than p={c.p}", "m counts taking-part ranks on one node")
        if c.p > plat.ranks:
            raise bad("p", f"is {c.p}, more than platform.ranks={plat.ranks}")
        if c.m > plat.ranks_per_node:
            raise bad("m", f"is {c.m}, more than platform.ranks_per_node={plat.ranks_per_node}")
        if len(c.times) != c.repetitions:
            raise bad("times", f"has {len(c.times)} entries, repetitions says {c.repetitions}")
        for j, t in enumerate(c.times):
            if not np.isfinite(t) or t < 0:
                raise InputError(f"{path}: {where}.times[{j}]", f"must be a non-negative time (got {t!r})")
        if not c.min <= c.median <= c.max:
            raise bad("median", f"{c.median} is not between min={c.min} and max={c.max}")
        (baseline if c.layout == BASELINE else cells).append(Cell(
            layout=c.layout, g=c.g, op=c.op, pattern=c.pattern, p=c.p, m=c.m, request_size=c.request_size,
            requests_per_rank=c.requests_per_rank, time=float(c.median), times=tuple(c.times), source=where,
            sharing=c.sharing))
    return Measurements(servers=n, cells=cells, source_format="probe", path=path,
                        platform=plat.model_dump(), baseline=baseline)


# ------------------------------------------------------------------------------------------------ IOR

_LAYOUT_IN_PATH = re.compile(r"(?:^|[/_.])(1-DH|1-DV|2-D)(?:[-_.]?g(\d+))?(?=$|[/_.])")


def layout_from_path(name: str) -> tuple[str, int | None] | None:
    """The layout a test file's directory names, e.g. ``/mnt/ofs/2-D-g2/file`` → ("2-D", 2)."""
    found = _LAYOUT_IN_PATH.findall(name)
    if not found:
        return None
    layout, g = found[-1]
    return layout, (int(g) if g else None)


def _get(obj: Any, key: str, path: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    if not isinstance(obj, dict):
        raise InputError(path.rsplit(".", 1)[0], "must be a JSON object")
    if key not in obj:
        if required:
            raise InputError(path, "is required", "pass the JSON that ior -O summaryFormat=JSON writes")
        return None
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(path, f"must be {names} (got {value!r})")
    return value


def _ior_times(test: dict[str, Any], where: str, total_requests: int) -> dict[str, list[float]]:
    """Per access ('write'/'read'): the read/write phase time of each repetition.

    IOR prints times with 4 decimals (``wrRdTime`` 0.0001 s steps; a fast cell prints 0.0), but its
    ``iops`` — all ranks' requests over the same first-start-to-last-end access time — keeps its
    significant digits, so the phase time is recovered as requests / iops; ``wrRdTime`` (then
    ``totalTime``) only when ``iops`` is missing or not finite."""
    results = test.get("Results")
    out: dict[str, list[float]] = {}
    if results is None:
        return out
    if not isinstance(results, list):
        raise InputError(f"{where}.Results", "must be a list (one entry per repetition)")
    for r, rep in enumerate(results):
        entries = rep if isinstance(rep, list) else [rep]
        for k, entry in enumerate(entries):
            loc = f"{where}.Results[{r}]" + (f"[{k}]" if isinstance(rep, list) else "")
            access = _get(entry, "access", f"{loc}.access", str)
            if access not in ("write", "read"):
                continue  # IOR also reports "remove" timings
            iops = entry.get("iops")
            if isinstance(iops, (int, float)) and not isinstance(iops, bool) and np.isfinite(iops) and iops > 0:
                t = total_requests / float(iops)
                key = "iops"
            else:
                key = "wrRdTime" if "wrRdTime" in entry else "totalTime"
                t = _get(entry, key, f"{loc}.{key}", (int, float))
            if not np.isfinite(t) or t <= 0:
                raise InputError(f"{loc}.{key}", f"must give a positive time (got {entry.get(key)!r})",
                                 "IOR prints 4 decimals: give the test more data (-b, -s) so it takes longer")
            out.setdefault(access, []).append(float(t))
    return out


def parse_ior(doc: Any, servers: int | None, path: str = "ior", layout: str | None = None,
              g: int | None = None) -> Measurements:
    """IOR's JSON: one cell per (test, access). Layout from ``layout``/``g`` or the test file's path."""
    if servers is None:
        raise InputError("--servers", "is required for IOR input (IOR does not know the file servers)",
                         "pass --servers N, the number of data servers behind the test directory")
    if servers < 1:
        raise InputError("--servers", f"must be at least 1 (got {servers})")
    if layout is not None and layout not in LAYOUTS:
        raise InputError("--layout", f"unknown layout {layout!r}", f"use one of {', '.join(LAYOUTS)}")
    if not isinstance(doc, dict):
        raise InputError(f"{path}: document", "must be a JSON object", "pass the output of ior -O summaryFormat=JSON")
    tests = _get(doc, "tests", f"{path}: tests", list)
    if not tests:
        raise InputError(f"{path}: tests", "is empty", "run IOR with at least one test")
    summary = _get(doc, "summary", f"{path}: summary", list, required=False) or []
    by_test: dict[tuple[int, str], dict[str, Any]] = {}
    for i, entry in enumerate(summary):
        loc = f"{path}: summary[{i}]"
        tid = _get(entry, "TestID", f"{loc}.TestID", int)
        by_test[(tid, _get(entry, "operation", f"{loc}.operation", str))] = entry

    cells: list[Cell] = []
    for i, test in enumerate(tests):
        where = f"{path}: tests[{i}]"
        tid = _get(test, "TestID", f"{where}.TestID", int)
        params = _get(test, "Parameters", f"{where}.Parameters", dict)
        options = _get(test, "Options", f"{where}.Options", dict, required=False) or {}
        ploc = f"{where}.Parameters"
        xfer = _get(params, "transferSize", f"{ploc}.transferSize", int)
        block = _get(params, "blockSize", f"{ploc}.blockSize", int)
        segments = _get(params, "segmentCount", f"{ploc}.segmentCount", int)
        if xfer < 1:
            raise InputError(f"{ploc}.transferSize", f"must be at least 1 byte (got {xfer})")
        if block < xfer or block % xfer:
            raise InputError(f"{ploc}.blockSize", f"{block} is not a multiple of transferSize={xfer}",
                             "IOR moves whole transfers; use -b a multiple of -t")
        if segments < 1:
            raise InputError(f"{ploc}.segmentCount", f"must be at least 1 (got {segments})")
        if "tasks" in options:
            tasks = _get(options, "tasks", f"{where}.Options.tasks", int)
        else:
            any_summary = next((v for (t, _), v in by_test.items() if t == tid), None)
            if any_summary is None:
                raise InputError(f"{where}.Options.tasks", "is required (and no summary entry gives numTasks)")
            tasks = _get(any_summary, "numTasks", f"{path}: summary(TestID={tid}).numTasks", int)
        per_node = _get(params, "tasksPerNode", f"{ploc}.tasksPerNode", int, required=False)
        if per_node is None:
            per_node = _get(options, "clients per node", f"{where}.Options.clients per node", int)
        if tasks < 1 or per_node < 1:
            raise InputError(f"{where}.Options.tasks", f"tasks={tasks} and tasksPerNode={per_node} must be ≥ 1")
        random = _get(params, "randomOffset", f"{ploc}.randomOffset", int, required=False)
        if random is None:
            random = int(_get(options, "ordering in a file", f"{where}.Options.ordering in a file", str) == "random")
        name = _get(params, "testFileName", f"{ploc}.testFileName", str, required=False) or \
            _get(options, "test filename", f"{where}.Options.test filename", str, required=False) or ""
        cell_layout, cell_g = (layout, g) if layout is not None else (layout_from_path(name) or (None, None))
        if cell_layout is None:
            raise InputError(f"{ploc}.testFileName", f"{name!r} does not name a layout",
                             "pass --layout (and --g for 2-D), or put 1-DH, 1-DV or 2-D-g<G> in the directory name")
        if cell_layout == "2-D" and (cell_g is None or not 1 <= cell_g <= servers):
            raise InputError("--g", f"layout 2-D needs a group count between 1 and --servers={servers} (got {cell_g})",
                             "pass --g, or name the directory 2-D-g<G>")
        if cell_layout != "2-D":
            cell_g = None
        file_per_proc = _get(params, "filePerProc", f"{ploc}.filePerProc", int, required=False)
        requests_per_rank = (block // xfer) * segments
        times = _ior_times(test, where, tasks * requests_per_rank)
        if not times:
            for access in ("write", "read"):
                entry = by_test.get((tid, access))
                if entry is not None:
                    # open-to-close time (the summary has no phase time); OPsMean keeps more digits
                    loc = f"{path}: summary(TestID={tid},{access})"
                    ops = entry.get("OPsMean")
                    if isinstance(ops, (int, float)) and not isinstance(ops, bool) and ops > 0 and np.isfinite(ops):
                        times[access] = [tasks * requests_per_rank / float(ops)]
                        continue
                    mean = _get(entry, "MeanTime", f"{loc}.MeanTime", (int, float))
                    if mean <= 0:
                        raise InputError(f"{loc}.MeanTime", f"must be positive (got {mean})")
                    times[access] = [float(mean)]
        if not times:
            raise InputError(f"{where}.Results", "has no read or write timings", "run IOR with -w and/or -r")
        for access, ts in times.items():
            cells.append(Cell(layout=cell_layout, g=cell_g, op=access,
                              pattern="random" if random else "sequential", p=tasks, m=min(per_node, tasks),
                              request_size=xfer, requests_per_rank=requests_per_rank,
                              time=float(np.median(ts)), times=tuple(ts), source=f"tests[{i}].{access}",
                              sharing="file-per-process" if file_per_proc else "shared"))
    return Measurements(servers=servers, cells=cells, source_format="ior", path=path)


# ------------------------------------------------------------------------------------------- loading


def detect_measurement_format(doc: Any) -> str | None:
    if isinstance(doc, dict):
        if "format" in doc or "cells" in doc:
            return "probe"
        if "tests" in doc or "summary" in doc:
            return "ior"
    return None


def load_measurements(path: str | Path, fmt: str | None = None, *, servers: int | None = None,
                      layout: str | None = None, g: int | None = None) -> Measurements:
    """Read a measurements file (``fmt`` None = detect from the JSON's top-level keys)."""
    if fmt is not None and fmt not in MEASUREMENT_FORMATS:
        raise InputError("--format", f"unknown measurements format {fmt!r}",
                         f"use one of {', '.join(MEASUREMENT_FORMATS)}")
    p = Path(path)
    doc = _read_json(p, "--measurements")
    fmt = fmt or detect_measurement_format(doc)
    if fmt is None:
        raise InputError(f"{p}: document", "is neither pfsprobe/1 nor IOR JSON output",
                         "pass --format probe or --format ior")
    if fmt == "probe":
        m = parse_probe(doc, str(p))
        if servers is not None and servers != m.servers:
            raise InputError("--servers", f"is {servers} but {p} says platform.servers={m.servers}",
                             "drop --servers for probe input")
        return m
    return parse_ior(doc, servers, str(p), layout=layout, g=g)


def merge_measurements(parts: list[Measurements]) -> Measurements:
    """One fit over several files (e.g. pfsprobe's packed and spread runs): same servers required; each
    cell's ``source`` is prefixed with its file so the per-cell report stays traceable."""
    if not parts:
        raise InputError("--measurements", "is required", "pass pfsprobe's or IOR's JSON")
    if len(parts) == 1:
        return parts[0]
    servers = {m.servers for m in parts}
    if len(servers) > 1:
        detail = ", ".join(f"{m.path}: {m.servers}" for m in parts)
        raise InputError("--measurements", f"files disagree on the number of servers ({detail})",
                         "fit measurements of one platform together")
    cells = [replace(c, source=f"{m.path}:{c.source}") for m in parts for c in m.cells]
    baseline = [replace(c, source=f"{m.path}:{c.source}") for m in parts for c in m.baseline]
    formats = sorted({m.source_format for m in parts})
    return Measurements(servers=servers.pop(), cells=cells, source_format="+".join(formats),
                        path=", ".join(m.path for m in parts), platform=parts[0].platform, baseline=baseline)
