"""Opening a Darshan log: its format version first (one line for a log pydarshan cannot read), then
pydarshan. Shared by the DXT reader (``darshan_log``) and the counter reader (``darshan_counters``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pfslayout.errors import InputError

SUPPORTED_MAJOR = 3  # libdarshan-util in the pinned darshan wheel reads log format 3.x
_VERSION = re.compile(rb"^(\d+)\.(\d+)\x00")
_GZIP = b"\x1f\x8b"


def check_version(path: Path) -> str:
    """The log's format version from its first bytes; an InputError for one the reader cannot read."""
    with path.open("rb") as handle:
        head = handle.read(16)
    if head.startswith(_GZIP):
        raise InputError(str(path), "is a Darshan 2.x log (whole-file gzip); this reader reads format 3.x only",
                         "convert it with darshan-convert from Darshan 3 or rerun the job under Darshan 3")
    match = _VERSION.match(head)
    if match is None:
        raise InputError(str(path), "does not start with a Darshan format version (e.g. 3.21)",
                         "pass a .darshan log written by darshan-runtime")
    major = int(match.group(1))
    version = f"{major}.{match.group(2).decode()}"
    if major != SUPPORTED_MAJOR:
        raise InputError(str(path), f"is a Darshan {version} log; this reader (darshan==3.5.0) reads format 3.x only",
                         "convert it to format 3 with darshan-convert, or upgrade pfslayout's darshan pin")
    return version



def open_report(path: Path) -> Any:
    """The log opened with pydarshan, after checking its format version (one line for a bad log)."""
    if not path.is_file():
        raise InputError("--trace", f"file {path} does not exist", "pass a Darshan log (.darshan)")
    check_version(path)
    import darshan  # imported here: loading libdarshan-util is only needed for Darshan input

    try:
        return darshan.DarshanReport(str(path), read_all=False)
    except Exception as err:  # pydarshan raises bare RuntimeError/ValueError from its C library
        raise InputError(str(path), f"is not a readable Darshan log ({err})", "pass a .darshan file") from None
