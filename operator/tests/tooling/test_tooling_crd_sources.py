"""The CRD sources agree with each other: generator ↔ crds/*.yaml ↔ docs/crd-reference.md ↔ the chart's
copies, and every field carries a description. (The API server's verdict on the schemas is in
e2e/tests/test_crds_apiserver.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CRD_FILES = sorted((ROOT / "crds").glob("*.yaml"))
CHART_CRDS = ROOT / "charts" / "pfs-layout-operator" / "templates" / "crds"


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def fields(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property path below `schema` (arrays as `[]`), written independently of the generator."""
    node = schema["items"] if schema.get("type") == "array" else schema
    if schema.get("type") == "array":
        path += "[]"
    for name, sub in node.get("properties", {}).items():
        p = f"{path}.{name}" if path else name
        yield p, sub
        yield from fields(sub, p)


def test_three_crds_with_expected_names() -> None:
    names = {load(f)["spec"]["names"]["kind"]: load(f) for f in CRD_FILES}
    assert set(names) == {"OrangeFSCluster", "CostCalibration", "LayoutPolicy"}
    shorts = {k: c["spec"]["names"]["shortNames"] for k, c in names.items()}
    assert shorts == {"OrangeFSCluster": ["ofs"], "CostCalibration": ["cc"], "LayoutPolicy": ["lp"]}
    for crd in names.values():
        assert crd["spec"]["group"] == "pfslayout.io"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
        assert version["subresources"] == {"status": {}}
        assert any(c["name"] == "Ready" for c in version["additionalPrinterColumns"])
        status = schema_of(crd)["properties"]["status"]["properties"]
        assert "observedGeneration" in status
        cond = status["conditions"]["items"]["properties"]
        assert {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"} <= set(cond)


def test_generated_files_are_up_to_date() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "crds" / "generate.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", CRD_FILES, ids=lambda p: p.name)
def test_every_field_has_a_description(path: Path) -> None:
    missing = [p for p, sub in fields(schema_of(load(path)))
               if not sub.get("description", "").strip() and p not in ("metadata",)]
    assert not missing, f"{path.name}: fields without a description: {missing}"


def documented_fields(kind: str) -> set[str]:
    text = (ROOT / "docs" / "crd-reference.md").read_text()
    section = text.split(f"## {kind}\n", 1)[1].split("\n## ", 1)[0]
    tables = [part.split("\n### ", 1)[0] for part in re.split(r"^### \w+ `\.(?:spec|status)`$", section,
                                                                flags=re.M)[1:]]
    return {f for t in tables for f in re.findall(r"^\| `((?:spec|status)[^`]*)` \|", t, flags=re.M)}


@pytest.mark.parametrize("path", CRD_FILES, ids=lambda p: p.name)
def test_reference_documents_exactly_the_schema_fields(path: Path) -> None:
    crd = load(path)
    schema = schema_of(crd)
    expected = {p for p, _ in fields(schema) if p.startswith(("spec", "status"))}
    documented = documented_fields(crd["spec"]["names"]["kind"])
    assert expected - documented == set(), "fields missing from docs/crd-reference.md"
    assert documented - expected == set(), "docs/crd-reference.md documents fields the schema lacks"


def strip_template(text: str) -> dict[str, Any]:
    """The chart copy without its Helm directives and chart-only annotations."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("{{"))
    doc = yaml.safe_load(body)
    doc["metadata"].pop("annotations", None)
    return doc


def test_chart_copies_are_exactly_crds() -> None:
    assert sorted(p.name for p in CHART_CRDS.glob("*.yaml")) == [p.name for p in CRD_FILES], \
        "chart CRD templates differ from crds/: run charts/pfs-layout-operator/sync-crds.sh"
    for src in CRD_FILES:
        copy = CHART_CRDS / src.name
        assert strip_template(copy.read_text()) == load(src), \
            f"{copy.relative_to(ROOT)} drifted from crds/{src.name}: run charts/pfs-layout-operator/sync-crds.sh"


def test_drift_check_catches_an_edit(tmp_path: Path) -> None:
    """The comparison above is not vacuous: one changed default is noticed."""
    src = CRD_FILES[0]
    edited = (CHART_CRDS / src.name).read_text().replace("default: 4\n", "default: 5\n", 1)
    if edited == (CHART_CRDS / src.name).read_text():
        edited = (CHART_CRDS / src.name).read_text().replace("description:", "description: x", 1)
    assert strip_template(edited) != load(src)


def test_strip_sizes_rule_accepts_exactly_powers_of_two() -> None:
    """The CEL membership list behind "power of two" holds every power of two in bounds and nothing else."""
    crd = load(ROOT / "crds" / "orangefsclusters.yaml")
    strip = schema_of(crd)["properties"]["spec"]["properties"]["distribution"]["properties"]["stripSize"]
    (cel,) = strip["x-kubernetes-validations"]
    members = re.search(r"\[(.*)\]", cel["rule"])
    assert members, cel["rule"]
    listed = [int(x) for x in members.group(1).split(",")]
    lo, hi = strip["minimum"], strip["maximum"]
    assert listed == [1 << k for k in range(lo.bit_length() - 1, hi.bit_length())]
    assert lo & (lo - 1) == 0 and hi & (hi - 1) == 0
