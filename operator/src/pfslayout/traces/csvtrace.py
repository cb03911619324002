"""CSV traces: ``rank,op,offset,size,start,end,file`` with a header line (columns in any order).

Optional columns: ``node`` (a name per rank, so ``derive`` can compute m) and ``collective`` (0/1,
true/false). Rows are parsed with the stdlib ``csv`` module and each column converted in one numpy call;
only when a conversion fails is the column scanned to name the first bad line.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.model import OP_READ, OP_WRITE, Trace

REQUIRED = ("rank", "op", "offset", "size", "start", "end", "file")
OPTIONAL = ("node", "collective")
_FIX_HEADER = "the first line must name the columns rank,op,offset,size,start,end,file"


def _where(path: Path, line: int, column: str) -> str:
    return f"{path}:{line}: column {column}"


def read_csv_trace(path: str | Path) -> Trace:
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("--trace", f"file {path} does not exist", "pass an existing CSV trace") from None
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                rows.append(row)
                lines.append(reader.line_num)
        except (csv.Error, UnicodeDecodeError) as err:
            raise InputError(f"{path}:{reader.line_num}", f"is not readable CSV ({err})", "save it as UTF-8 CSV") from None
    if header is None:
        raise InputError(str(path), "is empty: no header and no requests", _FIX_HEADER)
    names = [h.strip().lower() for h in header]
    col = _columns(path, names)
    width = len(names)
    for row, line in zip(rows, lines):
        if len(row) != width:
            raise InputError(f"{path}:{line}", f"has {len(row)} fields, the header has {width}",
                             "give every row one value per header column")
    if not rows:
        raise InputError(str(path), "has a header but no requests", "trace a run that reads or writes data")
    cols = list(zip(*rows))
    line_arr = np.asarray(lines)

    def text(name: str) -> np.ndarray:
        return np.char.strip(np.asarray(cols[col[name]], dtype=str))

    rank = _ints(path, line_arr, "rank", text("rank"))
    offset = _ints(path, line_arr, "offset", text("offset"))
    size = _ints(path, line_arr, "size", text("size"))
    start = _floats(path, line_arr, "start", text("start"))
    end = _floats(path, line_arr, "end", text("end"))
    op = _ops(path, line_arr, text("op"))
    _check_bad(path, line_arr, "end", end < start, end, "must not be before start")

    file_text = np.asarray(cols[col["file"]], dtype=str)
    _check_bad(path, line_arr, "file", np.char.str_len(np.char.strip(file_text)) == 0, file_text,
               "must name the file")
    files, file_id = np.unique(file_text, return_inverse=True)

    trace = Trace(rank=rank.astype(np.int32), op=op, offset=offset, size=size, start=start, end=end,
                  file_id=file_id.astype(np.int32).reshape(-1), files=[str(f) for f in files])
    if "node" in col:
        trace.node_of_rank = _node_of_rank(path, line_arr, rank, text("node"))
    if "collective" in col:
        trace.collective = _bools(path, line_arr, "collective", text("collective"))
    return trace


def _columns(path: Path, names: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name not in REQUIRED and name not in OPTIONAL:
            raise InputError(f"{path}:1: column {i + 1}", f"unknown column {name!r}",
                             f"use {','.join(REQUIRED)} (optional: {', '.join(OPTIONAL)})")
        if name in seen:
            raise InputError(f"{path}:1: column {name}", "appears twice", "keep one column of each name")
        seen[name] = i
    missing = [c for c in REQUIRED if c not in seen]
    if missing:
        raise InputError(f"{path}:1", f"header lacks column(s) {', '.join(missing)}", _FIX_HEADER)
    return seen


def _first_bad(path: Path, lines: np.ndarray, column: str, values: np.ndarray, ok: object, problem: str) -> None:
    for i, value in enumerate(values.tolist()):
        if not ok(value):  # type: ignore[operator]
            raise InputError(_where(path, int(lines[i]), column), f"{problem} (got {value!r})")


def _check_bad(path: Path, lines: np.ndarray, column: str, bad: np.ndarray, values: np.ndarray, problem: str) -> None:
    if np.any(bad):
        i = int(np.argmax(bad))
        value = values[i].item() if hasattr(values[i], "item") else values[i]
        raise InputError(_where(path, int(lines[i]), column), f"{problem} (got {value!r})")


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def _ints(path: Path, lines: np.ndarray, column: str, values: np.ndarray) -> np.ndarray:
    try:
        out = values.astype(np.int64)
    except (ValueError, OverflowError):
        _first_bad(path, lines, column, values, _is_int, "must be a whole number")
        raise  # unreachable: a value failed above
    _check_bad(path, lines, column, out < 0, out, "must not be negative")
    return out


def _is_float(value: str) -> bool:
    try:
        return np.isfinite(float(value))
    except ValueError:
        return False


def _floats(path: Path, lines: np.ndarray, column: str, values: np.ndarray) -> np.ndarray:
    try:
        out = values.astype(np.float64)
    except ValueError:
        _first_bad(path, lines, column, values, _is_float, "must be a time in seconds")
        raise
    if not np.all(np.isfinite(out)):
        _first_bad(path, lines, column, values, _is_float, "must be a finite time in seconds")
    return out


def _ops(path: Path, lines: np.ndarray, values: np.ndarray) -> np.ndarray:
    low = np.char.lower(values)
    op = np.where(low == "read", OP_READ, np.where(low == "write", OP_WRITE, 0)).astype(np.uint8)
    _check_bad(path, lines, "op", op == 0, values, "must be read or write")
    return op


def _bools(path: Path, lines: np.ndarray, column: str, values: np.ndarray) -> np.ndarray:
    low = np.char.lower(values)
    true = np.isin(low, ["1", "true", "yes"])
    false = np.isin(low, ["0", "false", "no", ""])
    _check_bad(path, lines, column, ~(true | false), values, "must be 0/1 or true/false")
    return true


def _node_of_rank(path: Path, lines: np.ndarray, rank: np.ndarray, node: np.ndarray) -> np.ndarray:
    names, node_id = np.unique(node, return_inverse=True)
    node_id = node_id.reshape(-1)
    out = np.full(int(rank.max()) + 1, -1, dtype=np.int32)
    out[rank] = node_id
    # one node per rank: after the scatter every row must agree with its rank's entry
    _check_bad(path, lines, "node", out[rank] != node_id, node,
               "differs from another row of the same rank (a rank runs on one node)")
    return out
