"""The CRDs stay backward compatible with the last release (`crds/released/<version>/`, the YAML that
release shipped), judged by `crds/compat.py`; and that judge catches every kind of break it names, on
every field of the real schemas — so a removed or retyped field fails the test command."""

from __future__ import annotations

import copy
import importlib.util
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
RELEASED = ROOT / "crds" / "released"
_spec = importlib.util.spec_from_file_location("crd_compat", ROOT / "crds" / "compat.py")
assert _spec and _spec.loader
compat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compat)


def newest_release() -> Path:
    versions = sorted((p for p in RELEASED.iterdir() if p.is_dir()),
                      key=lambda p: tuple(int(x) for x in p.name.split(".")))
    assert versions, f"no released CRDs under {RELEASED}"
    return versions[-1]


def test_current_crds_read_every_released_object() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "crds" / "compat.py"), str(newest_release()),
                           str(ROOT / "crds")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"backward-incompatible CRD change:\n{proc.stdout}{proc.stderr}"
    assert proc.stdout.startswith("compatible:"), proc.stdout


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any], dict[str, Any], str]]:
    """(path, parent, node, key in parent's properties) for every named property."""
    for name, sub in (schema.get("properties") or {}).items():
        p = f"{path}.{name}"
        yield p, schema, sub, name
        yield from nodes(sub, p)
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], path + "[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], path + "{}")


def released() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(newest_release().glob("*.yaml"))]


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def mutated(crd: dict[str, Any], index: int) -> tuple[dict[str, Any], str, dict[str, Any], dict[str, Any], str]:
    new = copy.deepcopy(crd)
    path, parent, node, key = list(nodes(schema(new)))[index]
    return new, path, parent, node, key


def every_field() -> list[tuple[int, int]]:
    return [(c, i) for c, crd in enumerate(released()) for i in range(len(list(nodes(schema(crd)))))]


def test_every_removed_or_retyped_field_is_caught() -> None:
    crds, fields = released(), every_field()
    assert len(fields) > 300, len(fields)
    for c, i in fields:
        new, path, parent, _, key = mutated(crds[c], i)
        del parent["properties"][key]
        assert any(f" {path}: removed" in b for b in compat.crd_breaks(crds[c], new)), path
        new, path, _, node, _ = mutated(crds[c], i)
        node["type"] = "string" if node.get("type") != "string" else "integer"
        assert any(f" {path}: type " in b for b in compat.crd_breaks(crds[c], new)), path
    print(f"{len(fields)} fields: each removal and each retyping reported")


def test_narrowing_is_caught_and_widening_is_not() -> None:
    crds, rng = released(), random.Random(14)
    narrowed = widened = 0
    for c, i in every_field():
        new, path, _, node, _ = mutated(crds[c], i)
        if len(node.get("enum") or []) >= 2:
            node["enum"] = node["enum"][1:]
            assert any(f" {path}: enum no longer admits" in b for b in compat.crd_breaks(crds[c], new)), path
            narrowed += 1
        for key in ("maximum", "maxLength", "maxItems"):
            new, path, _, node, _ = mutated(crds[c], i)
            if key in node and node[key] > 1:
                node[key] -= 1
                assert any(f" {path}: {key} lowered" in b for b in compat.crd_breaks(crds[c], new)), path
                node[key] += 2
                assert compat.crd_breaks(crds[c], new) == [], (path, key)
                narrowed += 1
                widened += 1
        new, path, _, node, _ = mutated(crds[c], i)
        if node.get("type") == "object" and rng.random() < 0.5:
            # a new optional field, a new description: fine; the same field made required: a break
            node.setdefault("properties", {})["addedLater"] = {"type": "string", "description": "new"}
            node["description"] = "reworded"
            assert compat.crd_breaks(crds[c], new) == [], path
            node["required"] = [*node.get("required", []), "addedLater"]
            assert any(f" {path}: newly required addedLater" in b for b in compat.crd_breaks(crds[c], new)), path
    assert narrowed > 20 and widened > 20, (narrowed, widened)


def test_versions_and_conversion() -> None:
    crd = released()[0]
    name = crd["metadata"]["name"]
    gone = copy.deepcopy(crd)
    gone["spec"]["versions"][0]["served"] = False
    assert compat.crd_breaks(crd, gone) == [f"{name} {crd['spec']['versions'][0]['name']}: no longer served"]
    assert compat.crd_breaks(crd, None) == [f"{name}: the CRD is gone"]
    # With a conversion webhook a served version may change shape; it must still be served.
    converted = copy.deepcopy(crd)
    converted["spec"]["conversion"] = {"strategy": "Webhook"}
    del schema(converted)["properties"]["spec"]
    assert compat.crd_breaks(crd, converted) == []


def test_cli_reports_one_line_per_break_and_exit_1(tmp_path: Path) -> None:
    crds = released()
    for crd in crds:
        if crd["metadata"]["name"].startswith("layoutpolicies"):
            del schema(crd)["properties"]["status"]["properties"]["injectedJobs"]
        (tmp_path / f"{crd['spec']['names']['plural']}.yaml").write_text(yaml.safe_dump(crd))
    proc = subprocess.run([sys.executable, str(ROOT / "crds" / "compat.py"), str(newest_release()), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stdout.splitlines() == [
        "layoutpolicies.pfslayout.io v1alpha1 .status.injectedJobs: removed"], proc.stdout
