"""Typed specs from custom objects: one place that turns a pydantic violation into one InputError line
naming the field (`spec.<path>`) and the kind to fix, for every kind."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pfslayout.errors import InputError

M = TypeVar("M", bound=BaseModel)


def parse_model(model: type[M], raw: dict[str, Any] | None, kind: str) -> M:
    """`model` validated from a CR's `.spec`. A validator's `ValueError("field: problem")` names its own
    field (cross-field rules); any other violation is named by its location."""
    try:
        return model.model_validate(raw or {})
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "spec"
        msg = str(first["msg"])
        fix = f"fix the {kind} spec"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
            field, _, problem = msg.partition(": ")
            if problem:
                raise InputError(f"spec.{field}", problem, fix) from None
        raise InputError(f"spec.{loc}", msg, fix) from None
