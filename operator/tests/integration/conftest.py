"""Fixtures for the tooling tier: the repository root, Helm (built by `e2e/harness/cluster.sh build`) and a
renderer that runs `helm template` with a throwaway Helm home."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "pfs-layout-operator"


def _helm_from_cluster_env() -> str | None:
    """Asks the cluster harness where it keeps Helm (it prints `export HELM=...`)."""
    script = ROOT / "e2e" / "harness" / "cluster.sh"
    if not script.exists():
        return None
    try:
        out = subprocess.run(["bash", str(script), "env"], capture_output=True, text=True, timeout=60,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if line.startswith("export HELM="):
            path = line.split("=", 1)[1].strip().strip("'\"")
            return path if os.access(path, os.X_OK) else None
    return None


def _versioned_cache_helm() -> str | None:
    versions = ROOT / "e2e" / "harness" / "cluster" / "versions.env"
    if not versions.exists():
        return None
    for line in versions.read_text().splitlines():
        if line.startswith("HELM_VERSION="):
            version = line.split("=", 1)[1].split("#")[0].strip()
            cache = Path(os.environ.get("PFSLAYOUT_CACHE", Path.home() / ".cache" / "pfs-layout-operator"))
            path = cache / f"helm-{version}" / "bin" / "helm"
            return str(path) if os.access(path, os.X_OK) else None
    return None


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The helm command; skips (saying how to get it) when `e2e/harness/cluster.sh build` has not built it."""
    path = os.environ.get("HELM") or _helm_from_cluster_env() or _versioned_cache_helm() or shutil.which("helm")
    if not path:
        pytest.skip("helm not found: `e2e/harness/cluster.sh build` builds it (e2e/test-all.sh runs that first)")
    return [path]


@pytest.fixture(scope="session")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment for helm: a throwaway Helm home, so no user or CI configuration leaks in."""
    home = tmp_path_factory.mktemp("helm-home")
    env = dict(os.environ)
    for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        env[var] = str(home / var.lower())
    return env


@pytest.fixture(scope="session")
def render(helm: list[str], helm_env: dict[str, str]) -> Callable[..., list[dict[str, Any]]]:
    """`render("--set", "k=v", ...)` → the parsed documents of `helm template` (fails on a helm error)."""

    def _render(*args: str, namespace: str = "pfs-system") -> list[dict[str, Any]]:
        proc = subprocess.run([*helm, "template", "rel", str(CHART), "-n", namespace, *args],
                              capture_output=True, text=True, timeout=120, check=False, env=helm_env)
        assert proc.returncode == 0, f"helm template {' '.join(args)} failed:\n{proc.stderr}"
        return [d for d in yaml.safe_load_all(proc.stdout) if d]

    return _render

