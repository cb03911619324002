#!/usr/bin/env python3
"""Is a CRD change backward compatible with a released one? (issue 14 item 5)

`python3 crds/compat.py crds/released/<version> crds` compares every CRD of the released directory with
the current one of the same name and prints one line per break, exiting 1 when there is any. An object
valid under the released schema must stay valid and mean the same under the new one, so these break it:

* a version that was served is gone or no longer served;
* a field is removed, or its type changes (`type`, or `x-kubernetes-int-or-string`,
  `x-kubernetes-preserve-unknown-fields` dropped);
* an enum loses a value; a field becomes required; a bound tightens (`minimum`/`maximum`,
  `minLength`/`maxLength`, `minItems`/`maxItems`, `maxProperties`) or a `pattern`/`format` changes;
* a printer column's JSONPath changes type.

Fields may be added, descriptions and defaults change, bounds widen. A version served through a
conversion webhook (`spec.conversion.strategy: Webhook`) may change shape: a converter can carry old
objects across, so only the version list is checked for it. CEL rules (`x-kubernetes-validations`) are
not compared: the API server ratchets them, so a stored object that broke a new rule can still be
updated without touching the offending field.

Kept apart from `generate.py` (which writes the schemas) so that it judges the YAML a release shipped,
not the code that makes it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]
LOWER_BOUNDS = ("minimum", "minLength", "minItems")  # raising one rejects values that were valid
UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")  # lowering one does
EXACT = ("pattern", "format", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields")


def _children(schema: Schema) -> Iterator[tuple[str, Schema]]:
    for name, sub in (schema.get("properties") or {}).items():
        yield f".{name}", sub
    if isinstance(schema.get("items"), dict):
        yield "[]", schema["items"]
    if isinstance(schema.get("additionalProperties"), dict):
        yield "{}", schema["additionalProperties"]


def schema_breaks(old: Schema, new: Schema | None, path: str) -> Iterator[str]:
    """Each way `new` rejects or reinterprets something `old` accepted, at `path` and below."""
    if new is None:
        yield f"{path}: removed"
        return
    if old.get("type") != new.get("type"):
        yield f"{path}: type {old.get('type')} became {new.get('type')}"
        return
    if "enum" in new:
        lost = [v for v in old.get("enum", [None]) if v not in new["enum"]] if "enum" in old else ["any value"]
        if lost:
            yield f"{path}: enum no longer admits {', '.join(map(str, lost))}"
    for key in LOWER_BOUNDS:
        if key in new and (key not in old or new[key] > old[key]):
            yield f"{path}: {key} raised from {old.get(key, 'none')} to {new[key]}"
    for key in UPPER_BOUNDS:
        if key in new and (key not in old or new[key] < old[key]):
            yield f"{path}: {key} lowered from {old.get(key, 'none')} to {new[key]}"
    for key in EXACT:
        if old.get(key) != new.get(key) and not (key == "x-kubernetes-preserve-unknown-fields" and new.get(key)):
            yield f"{path}: {key} changed from {old.get(key)!r} to {new.get(key)!r}"
    added = sorted(set(new.get("required") or []) - set(old.get("required") or []))
    if added:
        yield f"{path}: newly required {', '.join(added)}"
    new_children = dict(_children(new))
    for suffix, sub in _children(old):
        yield from schema_breaks(sub, new_children.get(suffix), path + suffix)


def crd_breaks(old: dict[str, Any], new: dict[str, Any] | None) -> list[str]:
    name = old["metadata"]["name"]
    if new is None:
        return [f"{name}: the CRD is gone"]
    converted = ((new["spec"].get("conversion") or {}).get("strategy")) == "Webhook"
    new_versions = {v["name"]: v for v in new["spec"]["versions"]}
    out: list[str] = []
    for v in old["spec"]["versions"]:
        if not v.get("served"):
            continue
        nv = new_versions.get(v["name"])
        if nv is None or not nv.get("served"):
            out.append(f"{name} {v['name']}: no longer served")
            continue
        if converted:
            continue
        old_schema, new_schema = v["schema"]["openAPIV3Schema"], nv["schema"]["openAPIV3Schema"]
        out += [f"{name} {v['name']} {b}" for b in schema_breaks(old_schema, new_schema, "")]
        new_columns = {c["name"]: c for c in nv.get("additionalPrinterColumns") or []}
        for c in v.get("additionalPrinterColumns") or []:
            nc = new_columns.get(c["name"])
            if nc is not None and (nc["type"], nc["jsonPath"]) != (c["type"], c["jsonPath"]):
                out.append(f"{name} {v['name']} column {c['name']}: {c['type']} {c['jsonPath']} became "
                           f"{nc['type']} {nc['jsonPath']}")
    return out


def load_dir(directory: Path) -> dict[str, dict[str, Any]]:
    crds = (yaml.safe_load(p.read_text()) for p in sorted(directory.glob("*.yaml")))
    return {c["metadata"]["name"]: c for c in crds if c and c.get("kind") == "CustomResourceDefinition"}


def breaks(released: Path, current: Path) -> list[str]:
    old, new = load_dir(released), load_dir(current)
    if not old:
        raise SystemExit(f"compat: no CRD in {released}")
    return [b for name, crd in sorted(old.items()) for b in crd_breaks(crd, new.get(name))]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: crds/compat.py RELEASED_DIR CURRENT_DIR", file=sys.stderr)
        return 2
    found = breaks(Path(argv[0]), Path(argv[1]))
    for line in found:
        print(line)
    if not found:
        print(f"compatible: every served version of {argv[0]} reads the same under {argv[1]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
