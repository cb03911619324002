"""Operator settings read from the environment (the chart sets them; docs/operator.md lists them)."""

from __future__ import annotations

import os

from pfslayout.errors import InputError


def seconds(var: str, default: float) -> float:
    raw = os.environ.get(var)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(var, f"{raw!r} is not a number of seconds", f"unset it or give e.g. {default:g}") from None
    if value <= 0:
        raise InputError(var, f"{raw!r} must be positive", f"unset it or give e.g. {default:g}")
    return value
