"""The one timestamp format the operator writes (statuses, Events): RFC 3339 in UTC, whole seconds, `Z`."""

from __future__ import annotations

import datetime as dt


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
