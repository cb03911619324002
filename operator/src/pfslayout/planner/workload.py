"""Reading workload description files (JSON or YAML): one description, a list, or {"workloads": [...]}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pfslayout.errors import InputError
from pfslayout.planner.models import WorkloadDescription


def workloads_from_data(data: Any, source: str = "--workload") -> list[WorkloadDescription]:
    if isinstance(data, dict) and "workloads" in data:
        data = data["workloads"]
        prefix = "workloads."
    else:
        prefix = ""
    items = data if isinstance(data, list) else [data]
    if not items:
        raise InputError(source, "describes no workload", "give at least one workload")
    out = []
    for i, item in enumerate(items):
        where = f"{prefix}{i}." if isinstance(data, list) else prefix
        if not isinstance(item, dict):
            raise InputError(f"{source}: {where.rstrip('.') or 'workload'}", "must be a mapping")
        try:
            out.append(WorkloadDescription.model_validate(item))
        except ValidationError as err:
            first = err.errors()[0]
            field = where + ".".join(str(x) for x in first["loc"])
            problem = "is required" if first["type"] == "missing" else first["msg"].lower()
            if first["type"] == "extra_forbidden":
                problem = "is not a known field"
            raise InputError(f"{source}: {field or 'workload'}", problem,
                             "see docs/cost-model.md, 'Workload description'") from None
    return out


def load_workloads(path: str | Path) -> list[WorkloadDescription]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("--workload", f"file {path} does not exist") from None
    except OSError as err:
        raise InputError("--workload", f"cannot read {path}: {err.strerror}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError):
        raise InputError("--workload", f"{path} is not valid JSON/YAML", "fix the syntax") from None
    return workloads_from_data(data, source=str(path))
