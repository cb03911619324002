"""Byte counts as people type them on command lines: ``4096``, ``16K``, ``4M``, ``1GiB``.

K, M and G are powers of 2 (the papers' request sizes are powers of two, docs/seeds.md §6 A7); a trailing
``B`` or ``iB`` is accepted. One parser for the CLI, the performance lab and the benchmarks, so a size means
the same everywhere and a bad one is reported the same way: one line naming the option and the item.
"""

from __future__ import annotations

from pfslayout.errors import InputError

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str, option: str = "--sizes", minimum: int = 1) -> int:
    """One byte count of at least ``minimum``; InputError naming ``option`` otherwise."""
    raw = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = _UNITS.get(raw[-1:], 1)
    digits = raw[:-1] if raw[-1:] in _UNITS else raw
    if not digits.isdigit() or int(digits) * scale < minimum:
        low = f" of at least {minimum}" if minimum > 1 else ""
        raise InputError(option, f"{text.strip()!r} is not a size{low}", "give bytes or K/M/G, e.g. 4K,64K,1M")
    return int(digits) * scale


def parse_sizes(text: str, option: str = "--sizes", minimum: int = 1) -> list[int]:
    """A comma-separated list of byte counts (``16K,256K,4M``), each checked by ``parse_size``."""
    return [parse_size(item, option, minimum) for item in text.split(",")]
