"""CSV traces: ``rank,op,offset,size,start,end,file`` with a header line (columns in any order).

Optional columns: ``node`` (a name per rank, so ``derive`` can compute m) and ``collective`` (0/1,
true/false). The fast path parses with ``numpy.loadtxt`` (C, ~1 M rows in a few seconds); if anything
is wrong with the file it is re-read with the stdlib ``csv`` module, which tracks line numbers, so the
error names the file, line and column of the first bad value.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pfslayout.errors import InputError
from pfslayout.traces.model import OP_READ, OP_WRITE, Trace

REQUIRED = ("rank", "op", "offset", "size", "start", "end", "file")
OPTIONAL = ("node", "collective")
_FIX_HEADER = "the first line must name the columns rank,op,offset,size,start,end,file"


def _where(path: Path, line: int, column: str) -> str:
    return f"{path}:{line}: column {column}"


_NUMERIC = {"rank": "i8", "offset": "i8", "size": "i8", "start": "f8", "end": "f8"}


def read_csv_trace(path: str | Path) -> Trace:
    path = Path(path)
    if not path.is_file():
        raise InputError("--trace", f"file {path} does not exist", "pass an existing CSV trace")
    try:
        return _read_fast(path)
    except (ValueError, IndexError, UnicodeDecodeError, InputError, Warning):
        # something is wrong (or unusual, e.g. blank lines or quoted newlines): the careful reader
        # either accepts it or names the exact line and column
        return _read_careful(path)


def _read_fast(path: Path) -> Trace:
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), None)
    if header is None:
        raise InputError(str(path), "is empty")
    names = [h.strip().lower() for h in header]
    col = _columns(path, names)
    _check_shape(path, len(names))
    numeric = [name for name in _NUMERIC if name in col]
    texts = [name for name in ("op", "file", "node", "collective") if name in col]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "input contained no data" and the like → careful path
        nums = np.loadtxt(path, usecols=[col[c] for c in numeric], dtype=[(c, _NUMERIC[c]) for c in numeric],
                          ndmin=1, delimiter=",", skiprows=1, comments=None, quotechar='"', encoding="utf-8")
        strs = np.loadtxt(path, usecols=[col[c] for c in texts], dtype=str, ndmin=2, delimiter=",", skiprows=1,
                          comments=None, quotechar='"', encoding="utf-8")
    if nums.shape[0] == 0 or strs.shape[0] != nums.shape[0]:
        raise ValueError("row count")
    # line numbers are exact when every row is one line (else validation failure → careful path)
    lines = np.arange(2, nums.shape[0] + 2)
    return _build(path, lines, {c: nums[c] for c in numeric},
                  {c: np.char.strip(strs[:, i]) for i, c in enumerate(texts)}, raw_file=strs[:, texts.index("file")])


def _check_shape(path: Path, width: int) -> None:
    """loadtxt with usecols ignores surplus fields and skips blank lines; insist on the plain shape (every
    line non-empty with exactly width−1 commas, no quoting) so its row i is line i + 2 of the file."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size and raw[-1] != ord("\n"):
        raw = np.append(raw, np.uint8(ord("\n")))
    if np.any((raw == ord('"')) | (raw == ord("\r"))):
        raise ValueError("quoted or CRLF CSV")
    newlines = np.flatnonzero(raw == ord("\n"))
    commas = np.flatnonzero(raw == ord(","))
    per_line = np.diff(np.searchsorted(commas, newlines), prepend=0)
    lengths = np.diff(newlines, prepend=-1) - 1
    if np.any(per_line != width - 1) or np.any(lengths == 0):
        raise ValueError("ragged or blank lines")


def _read_careful(path: Path) -> Trace:
    handle = path.open(newline="", encoding="utf-8")
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
            raise InputError(f"{path}:{reader.line_num}", f"is not readable CSV ({err})",
                "save it as UTF-8 CSV") from None
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

    numbers = {
        "rank": _ints(path, line_arr, "rank", text("rank")),
        "offset": _ints(path, line_arr, "offset", text("offset")),
        "size": _ints(path, line_arr, "size", text("size")),
        "start": _floats(path, line_arr, "start", text("start")),
        "end": _floats(path, line_arr, "end", text("end")),
    }
    texts: dict[str, np.ndarray] = {name: text(name) for name in ("op", "file", "node", "collective") if name in col}
    return _build(path, line_arr, numbers, texts, raw_file=np.asarray(cols[col["file"]], dtype=str))


def _build(path: Path, lines: np.ndarray, numbers: dict[str, np.ndarray], texts: dict[str, np.ndarray],
           raw_file: np.ndarray) -> Trace:
    rank, offset, size = numbers["rank"], numbers["offset"], numbers["size"]
    start, end = numbers["start"], numbers["end"]
    for name, values in (("rank", rank), ("offset", offset), ("size", size)):
        _check_bad(path, lines, name, values < 0, values, "must not be negative")
    for name, values in (("start", start), ("end", end)):
        _check_bad(path, lines, name, ~np.isfinite(values), values, "must be a finite time in seconds")
    op = _ops(path, lines, texts["op"])
    _check_bad(path, lines, "end", end < start, end, "must not be before start")
    _check_bad(path, lines, "file", texts["file"] == "", raw_file, "must name the file")
    files, file_id = np.unique(raw_file, return_inverse=True)
    trace = Trace(rank=rank.astype(np.int32), op=op, offset=offset.astype(np.int64), size=size.astype(np.int64),
                  start=start.astype(np.float64), end=end.astype(np.float64),
                  file_id=file_id.astype(np.int32).reshape(-1), files=[str(f) for f in files])
    if "node" in texts:
        trace.node_of_rank = _node_of_rank(path, lines, rank, texts["node"])
    if "collective" in texts:
        trace.collective = _bools(path, lines, "collective", texts["collective"])
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


def _parses(parse: Callable[[str], object], value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _numbers(path: Path, lines: np.ndarray, column: str, values: np.ndarray, dtype: type,
             parse: Callable[[str], object], problem: str) -> np.ndarray:
    try:
        out: np.ndarray = values.astype(dtype)
    except (ValueError, OverflowError):
        # the vectorised conversion does not say which value failed: find the first one, by its line
        _first_bad(path, lines, column, values, lambda value: _parses(parse, value), problem)
        raise  # unreachable in practice: every value parsed on its own, so the original error stands
    return out


def _int64(value: str) -> int:
    number = int(value)
    if not -(1 << 63) <= number < (1 << 63):
        raise ValueError(value)  # the columns are int64: a larger value must fail here, by its line
    return number


def _ints(path: Path, lines: np.ndarray, column: str, values: np.ndarray) -> np.ndarray:
    return _numbers(path, lines, column, values, np.int64, _int64, "must be a whole number below 2^63")


def _floats(path: Path, lines: np.ndarray, column: str, values: np.ndarray) -> np.ndarray:
    return _numbers(path, lines, column, values, np.float64, float, "must be a time in seconds")


def _ops(path: Path, lines: np.ndarray, values: np.ndarray) -> np.ndarray:
    plain = (values == "read") | (values == "write")
    # lower-casing a million strings is slow: only when some op is not already lower case
    low = values if np.all(plain) else np.char.lower(values)
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
    _, node_id = np.unique(node, return_inverse=True)
    node_id = node_id.reshape(-1)
    out = np.full(int(rank.max()) + 1, -1, dtype=np.int32)
    out[rank] = node_id
    # one node per rank: after the scatter every row must agree with its rank's entry
    _check_bad(path, lines, "node", out[rank] != node_id, node,
               "differs from another row of the same rank (a rank runs on one node)")
    return out
