"""The one timestamp format the operator writes (statuses, Events): RFC 3339 in UTC, whole seconds, `Z`."""

from __future__ import annotations

import datetime as dt


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(stamp: str) -> float:
    """A timestamp of `now()`'s format (or any RFC 3339 one) as seconds since the epoch."""
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
