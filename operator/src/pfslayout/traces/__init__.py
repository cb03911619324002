"""Trace readers: CSV, the shim's binary trace, Darshan DXT — all into ``Trace``."""

from pfslayout.traces.model import OP_READ, OP_WRITE, Trace

__all__ = ["OP_READ", "OP_WRITE", "Trace"]
