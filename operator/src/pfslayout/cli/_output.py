"""Shared output helpers: one JSON document for --json, a rich table otherwise."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console

console = Console()


def _jsonable(value: Any) -> Any:
    # numpy scalars/arrays and non-finite floats must not leak into the JSON contract.
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def print_json(document: Any) -> None:
    print(json.dumps(_jsonable(document), indent=2, sort_keys=False))
