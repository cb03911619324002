"""Every manifest in e2e/tests/invalid/ is refused by the real API server (OpenAPI schema or CEL rule) with an
error that names the field its header promises; the accepted examples and policies/*.yaml pass."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pfstestkit import REPO
from pfstestkit.crd_release import crd_namespace, install_crds

INVALID = sorted((REPO / "e2e" / "tests" / "invalid").glob("*.yaml"))
ACCEPTED = sorted((REPO / "e2e" / "tests" / "invalid" / "accepted").glob("*.yaml"))
POLICIES = sorted((REPO / "policies").glob("*.yaml"))


def header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^# (Invalid|Field|Update): (.*)$", line)
        if m:
            out[m.group(1).lower()] = m.group(2).strip()
        elif not line.startswith("#"):
            break
    return out


def test_corpus_is_large_and_every_file_says_what_is_wrong() -> None:
    assert len(INVALID) >= 20
    for path in INVALID:
        h = header(path)
        assert h.get("invalid") and h.get("field", "").startswith("spec"), f"{path.name}: header incomplete"
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        assert len(docs) == (2 if "update" in h else 1), path.name


@pytest.fixture(scope="module")
def crds(cluster) -> None:  # noqa: ANN001 - the `cluster` fixture of e2e/tests/conftest.py
    install_crds(cluster)


@pytest.fixture(scope="module")
def ns(cluster, crds) -> Iterator[str]:  # noqa: ANN001
    with crd_namespace(cluster, "invalid", served=False) as name:
        yield name


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_manifest_is_rejected_naming_the_field(cluster, ns: str, path: Path) -> None:  # noqa: ANN001
    h = header(path)
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if "update" in h:
        original, change = docs
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(original))
        try:
            proc = cluster.kubectl("apply", "-n", ns, "--dry-run=server", "-f", "-",
                                   input=yaml.safe_dump(change), check=False)
        finally:
            cluster.kubectl("delete", "-n", ns, "-f", "-", "--wait=false", input=yaml.safe_dump(original),
                            check=False)
    else:
        proc = cluster.kubectl("create", "-n", ns, "--dry-run=server", "-f", "-",
                               input=yaml.safe_dump(docs[0]), check=False)
    message = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{path.name} ({h['invalid']}) was accepted:\n{message}"
    assert h["field"] in message, f"{path.name}: the error does not name {h['field']}:\n{message}"
    # One readable line per cause, not a stack trace.
    assert "Traceback" not in message and "panic" not in message


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.stem)
def test_accepted_examples_pass(cluster, ns: str, path: Path) -> None:  # noqa: ANN001
    proc = cluster.kubectl("create", "-n", ns, "--dry-run=server", "-f", str(path), "-o", "name", check=False)
    assert proc.returncode == 0, proc.stderr


def test_policies_examples_are_accepted(cluster, ns: str) -> None:  # noqa: ANN001
    if not POLICIES:
        pytest.skip("policies/ has no example manifests yet")
    for path in POLICIES:
        proc = cluster.kubectl("create", "-n", ns, "--dry-run=server", "-f", str(path), "-o", "name",
                               check=False)
        assert proc.returncode == 0, f"policies/{path.name} rejected:\n{proc.stderr}"
