"""The one in-memory form every trace reader produces and the planner consumes.

Columnar numpy arrays, one entry per I/O request, so a whole trace is costed without a Python loop per
request. Readers (CSV, shim binary, Darshan DXT) fill the raw columns; ``derive`` fills the model inputs
(p, m, sequential) that the cost model needs per request (docs/seeds.md §3.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

OP_READ = 1
OP_WRITE = 2


@dataclass
class Trace:
    """Requests of one run, columnar. All arrays have the same length; times are seconds, sizes bytes."""

    rank: np.ndarray  # int32
    op: np.ndarray  # uint8, OP_READ or OP_WRITE
    offset: np.ndarray  # int64, byte offset in the file
    size: np.ndarray  # int64, bytes moved
    start: np.ndarray  # float64
    end: np.ndarray  # float64
    file_id: np.ndarray  # int32, index into ``files``
    files: list[str] = field(default_factory=list)
    # node index per rank (len = number of ranks; -1 for a rank index absent from the trace), or None
    # when the trace does not know nodes
    node_of_rank: np.ndarray | None = None
    # derived per request by ``pfslayout.traces.derive``; None until then
    p: np.ndarray | None = None  # int32, concurrency
    m: np.ndarray | None = None  # int32, ranks of that phase on the issuing node
    sequential: np.ndarray | None = None  # bool
    collective: np.ndarray | None = None  # bool, when the source knows it
    # size of the communicator collective records ran on (MPI_COMM_WORLD for the shim), when known
    nprocs: int | None = None
    # records the producer could not keep (shim buffer full); the trace under-counts the run when > 0
    dropped: int = 0
    # per file, filled by ``derive``: the most common request size (bytes) and the file set (directory)
    # index the concurrency was counted over; ``file_sets`` names those sets
    dominant_size: np.ndarray | None = None  # int64, len = len(files)
    file_set: np.ndarray | None = None  # int32, len = len(files)
    file_sets: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.size.shape[0])

    @property
    def derived(self) -> bool:
        return self.p is not None and self.m is not None and self.sequential is not None

    def summary(self) -> dict[str, object]:
        """A small JSON-able description (counts, bytes, span) for CLI output and logs."""
        n = len(self)
        return {
            "requests": n,
            "ranks": int(np.unique(self.rank).size) if n else 0,
            "files": len(self.files),
            "bytes_read": int(self.size[self.op == OP_READ].sum()) if n else 0,
            "bytes_written": int(self.size[self.op == OP_WRITE].sum()) if n else 0,
            "span_s": float(self.end.max() - self.start.min()) if n else 0.0,
        }
