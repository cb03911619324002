"""Trace readers: CSV, the shim's binary trace, Darshan DXT — all into ``Trace``; ``derive`` adds the
cost model's per-request inputs (p, m, sequential) and per-file dominant request sizes."""

from pfslayout.traces.csvtrace import read_csv_trace
from pfslayout.traces.darshan_log import read_darshan_log
from pfslayout.traces.derive import derive, dominant_sizes
from pfslayout.traces.load import FORMATS, detect_format, load_trace
from pfslayout.traces.model import OP_READ, OP_WRITE, Trace
from pfslayout.traces.shim import read_shim_trace_dir, write_shim_trace

__all__ = [
    "FORMATS",
    "OP_READ",
    "OP_WRITE",
    "Trace",
    "derive",
    "detect_format",
    "dominant_sizes",
    "load_trace",
    "read_csv_trace",
    "read_darshan_log",
    "read_shim_trace_dir",
    "write_shim_trace",
]
