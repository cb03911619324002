"""e2e/harness/cluster/build.sh holds its lock one component at a time and returns a component already
built at once, even while another build holds the lock: the test command's background build goes on from
Helm to the Kubernetes binaries while the foreground asks for Helm alone (e2e/test-all.sh, step "Helm").
Run on a cache directory of the test's own, with installed components stamped by hand (nothing is built)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "e2e" / "harness" / "cluster" / "build.sh"
LIB = ROOT / "e2e" / "harness" / "cluster" / "lib.sh"

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("go", "jq", "flock")),
                                reason="build.sh needs go, jq and flock")


def env_for(cache: Path) -> dict[str, str]:
    return {**os.environ, "PFSLAYOUT_CACHE": str(cache), "PFSLAYOUT_GOCACHE": str(cache / "go" / "build"),
            "PFSLAYOUT_GOMODCACHE": str(cache / "go" / "mod")}


def component_dir(cache: Path, variable: str) -> Path:
    done = subprocess.run(["bash", "-c", f'. "$1"; echo "${variable}"', "_", str(LIB)], env=env_for(cache),
                          capture_output=True, text=True, timeout=30, check=True)
    return Path(done.stdout.strip())


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A cache directory whose build lock another process holds."""
    cache = tmp_path / "cache"
    cache.mkdir()
    lock = cache / "build.lock"
    holder = subprocess.Popen(["flock", str(lock), "sleep", "600"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 0:
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.05)
        yield cache
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()


def test_a_built_component_is_returned_while_the_lock_is_held(held: Path) -> None:
    helm = component_dir(held, "HELM_DIR")
    helm.mkdir(parents=True)
    (helm / ".complete").touch()
    done = subprocess.run(["bash", str(BUILD), "helm"], env=env_for(held), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr, done.stderr


def test_a_component_not_built_waits_for_the_lock_naming_it(held: Path) -> None:
    helm = component_dir(held, "HELM_DIR")
    helm.mkdir(parents=True)
    (helm / ".complete").touch()
    proc = subprocess.Popen(["bash", str(BUILD), "helm", "kwok"], env=env_for(held), stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready, "build.sh printed nothing in 60 s"
        line = proc.stderr.readline()
        assert "holds" in line and "before kwok" in line, line
        assert proc.poll() is None, "build.sh ended instead of waiting for the lock"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_an_unknown_component_fails_before_the_lock(held: Path) -> None:
    done = subprocess.run(["bash", str(BUILD), "helm", "kubeadm"], env=env_for(held), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "unknown component 'kubeadm'" in done.stderr, done.stderr
