"""Handle ranges that never move when servers are added.

pvfs2-genconfig splits the 63-bit handle space evenly over the servers it is given (plus optional
"reserved for future use" ranges). An even split over the *current* count would move every range when
the count changes, which invalidates every object already stored. Instead the space is cut into a
fixed number of slots -- as genconfig does with `--res-meta-ranges`/`--res-io-ranges` up to
MAX_SERVERS -- and server `i` always owns meta slot `i` and data slot `i`. Adding server `k` then only
adds ranges nobody used before, which is how the OrangeFS FAQ says a server is added to a live file
system.
"""

from __future__ import annotations

from dataclasses import dataclass

from pfslayout.errors import InputError

MAX_SERVERS = 64  # matches `spec.servers.count` maximum in crds/orangefsclusters.yaml
FIRST_HANDLE = 4  # genconfig's default --first-handle
LAST_HANDLE = 2**63 - 1  # genconfig's default --last-handle
ROOT_HANDLE = 1048576  # genconfig's default --root-handle; lies in meta slot 0
_STEP = (LAST_HANDLE - FIRST_HANDLE + 1) // (2 * MAX_SERVERS)


@dataclass(frozen=True)
class HandleRange:
    first: int
    last: int

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


def _slot(index: int) -> HandleRange:
    first = FIRST_HANDLE + index * _STEP
    return HandleRange(first, first + _STEP - 1)


def _check(ordinal: int) -> None:
    if not 0 <= ordinal < MAX_SERVERS:
        raise InputError("servers", f"server ordinal {ordinal} is outside 0..{MAX_SERVERS - 1}",
                         f"use at most {MAX_SERVERS} servers")


def meta_range(ordinal: int) -> HandleRange:
    _check(ordinal)
    return _slot(ordinal)


def data_range(ordinal: int) -> HandleRange:
    _check(ordinal)
    return _slot(MAX_SERVERS + ordinal)
