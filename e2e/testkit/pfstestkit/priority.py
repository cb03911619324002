"""The CPU and I/O priority of a test that measures time.

The test command runs the tiers but e2e at the lowest priority (nice 19, ionice idle) beside the e2e lanes
(e2e/test-all.sh), so they take only what the lanes leave. A test whose assertions rest on measured times
(a fit's error, a shaped link's rate) would then measure the lanes' bursts instead: the first run side by
side failed test_calibration_real_posix's median relative error (0.63 against < 0.5). `measuring()` gives
the calling thread — and every thread and process it starts, which inherit it — normal priority while it
measures, and the old one back afterwards. Lowering a niceness needs CAP_SYS_NICE (the test command runs as
root on the machines it supports); without it the priority stays as it was.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

NORMAL_NICE = 0
NORMAL_IO = ("2", "4")  # best-effort, the kernel's default level

IO_CLASSES = {"none": "0", "realtime": "1", "best-effort": "2", "idle": "3"}


def io_priority(tid: int) -> tuple[str, str | None]:
    """The thread's I/O scheduling class and level, as `ionice -p` reports them ("idle", "best-effort: prio 4")."""
    out = subprocess.run(["ionice", "-p", str(tid)], capture_output=True, text=True, check=True).stdout.strip()
    match = re.fullmatch(r"([a-z-]+)(?:: prio (\d+))?", out)
    if not match or match.group(1) not in IO_CLASSES:
        raise ValueError(f"ionice -p {tid} printed {out!r}")
    return IO_CLASSES[match.group(1)], match.group(2)


def set_io_priority(tid: int, io_class: str, level: str | None) -> None:
    subprocess.run(["ionice", "-c", io_class, *(["-n", level] if level else []), "-p", str(tid)],
                   capture_output=True, check=True)


@contextmanager
def measuring() -> Iterator[None]:
    """Normal CPU and I/O priority for this thread and what it starts, while the block runs."""
    tid = threading.get_native_id()
    nice = os.getpriority(os.PRIO_PROCESS, tid)  # Linux: a thread's own niceness
    io = io_priority(tid)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, NORMAL_NICE)
        set_io_priority(tid, *NORMAL_IO)
    except (PermissionError, subprocess.CalledProcessError):
        pass  # without CAP_SYS_NICE: measured at the priority the session has
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, tid, nice)  # raising a niceness needs no privilege
        with suppress(subprocess.CalledProcessError):
            set_io_priority(tid, *io)
