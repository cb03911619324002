"""One entry point for every trace format: ``load_trace(path, fmt)`` → a derived ``Trace``."""

from __future__ import annotations

from pathlib import Path

from pfslayout.errors import InputError
from pfslayout.traces.csvtrace import read_csv_trace
from pfslayout.traces.darshan_log import read_darshan_log
from pfslayout.traces.derive import derive
from pfslayout.traces.model import Trace
from pfslayout.traces.shim import MAGIC, SUFFIX, read_shim_trace_dir

FORMATS = ("csv", "shim", "darshan")


def detect_format(path: str | Path) -> str:
    """A directory or a file starting with PFSTRACE is the shim's; ``.csv``/``.darshan`` by suffix; else
    by content (a Darshan log starts with its version string, e.g. ``3.41``)."""
    path = Path(path)
    if path.is_dir():
        return "shim"
    if not path.exists():
        raise InputError("--trace", f"{path} does not exist",
            "pass a CSV file, a Darshan log or a shim trace directory")
    with path.open("rb") as f:
        head = f.read(64)
    if head.startswith(MAGIC) or path.suffix == SUFFIX:
        return "shim"
    if path.suffix.lower() == ".csv":
        return "csv"
    if path.suffix.lower() == ".darshan":
        return "darshan"
    if len(head) >= 3 and head[:1].isdigit() and head[1:2] == b"." and b"\0" in head[:8]:
        return "darshan"
    first_line = head.split(b"\n", 1)[0].decode("utf-8", "replace").lower()
    if "rank" in first_line and "," in first_line:
        return "csv"
    raise InputError("--format", f"cannot tell the format of {path}", f"pass --format {'|'.join(FORMATS)}")


def load_trace(path: str | Path, fmt: str | None = None, *, group: str = "directory",
               m_of: str = "issuing-node") -> Trace:
    """Read a trace (``fmt`` None = detect) and derive p, m, sequential and dominant sizes
    (``group`` and ``m_of`` as in ``derive``)."""
    if fmt is None:
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise InputError("--format", f"unknown trace format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if fmt == "csv":
        trace = read_csv_trace(path)
    elif fmt == "shim":
        trace = read_shim_trace_dir(path)
    else:
        trace = read_darshan_log(path)
    if len(trace) == 0:
        raise InputError("--trace", f"{path} holds no I/O requests", "trace a run that reads or writes data")
    return derive(trace, group=group, m_of=m_of)
