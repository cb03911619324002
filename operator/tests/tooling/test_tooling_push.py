"""`images/build.sh --push REGISTRY[/PREFIX]` and `charts/push.sh REGISTRY[/PREFIX]` refuse bad input in
one line before anything is built or packaged: a registry that does not answer (named, with its URL), a
destination that is not REGISTRY[/PREFIX], an image that is not pushed, a chart version Helm would refuse.
The pushes themselves run in the e2e tier: `e2e/harness/cluster.sh up` pushes the images to the test
cluster's registry (test_real_registry.py) and the e2e releases install the chart pushed there
(test_chart_install.py, test_real_upgrade.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "images" / "build.sh"
PUSH_CHART = ROOT / "charts" / "push.sh"

needs_push_tools = pytest.mark.skipif(shutil.which("buildah") is None or shutil.which("skopeo") is None,
                                      reason="images/build.sh --push needs buildah and skopeo (host-packages.sh)")


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PFSLAYOUT_CACHE": str(tmp_path / "cache")}
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True, timeout=60, env=env)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0, done
    assert done.stdout == "", done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@needs_push_tools
def test_a_registry_that_does_not_answer_is_named(tmp_path: Path) -> None:
    port = closed_port()
    line = one_line_error(run(tmp_path, "--push", f"127.0.0.1:{port}", "operator"))
    assert f"no registry answers at http://127.0.0.1:{port}/v2/" in line, line
    assert not (tmp_path / "cache" / "images").exists()  # asked before anything was built


@needs_push_tools
@pytest.mark.parametrize("dest", ["", "not a registry", "ghcr.io/UPPER", "host:port/x"])
def test_a_destination_that_is_not_registry_prefix(tmp_path: Path, dest: str) -> None:
    line = one_line_error(run(tmp_path, "--push", dest, "operator"))
    assert "REGISTRY[/PREFIX]" in line, line


@needs_push_tools
def test_only_the_three_images_are_pushed(tmp_path: Path) -> None:
    line = one_line_error(run(tmp_path, "--push", f"127.0.0.1:{closed_port()}", "pause"))
    assert "--push pushes operator, orangefs and mpi, not 'pause'" in line, line


def push_chart(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM": str(tmp_path / "no-helm")}  # never reached: the checks come first
    return subprocess.run(["bash", str(PUSH_CHART), *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_chart_push_names_a_registry_that_does_not_answer(tmp_path: Path) -> None:
    port = closed_port()
    done = push_chart(tmp_path, f"127.0.0.1:{port}")
    assert done.returncode == 2
    line = one_line_error(done)
    assert line.startswith("charts/push.sh: ") and f"no registry answers at http://127.0.0.1:{port}/v2/" in line, line


@pytest.mark.parametrize(("args", "expected"), [
    ((), "usage: charts/push.sh [--images REGISTRY/PREFIX] REGISTRY[/PREFIX] [VERSION] [CHART_DIR]"),
    (("--images", "ghcr.io/you/x"), "usage: charts/push.sh [--images REGISTRY/PREFIX]"),
    (("--images", "ghcr.io", "127.0.0.1:5000"), "--images 'ghcr.io' is not REGISTRY/PREFIX"),
    (("--images=Not/A/Registry", "127.0.0.1:5000"), "--images 'Not/A/Registry' is not REGISTRY/PREFIX"),
    (("not a registry",), "is not REGISTRY[/PREFIX]"),
    (("127.0.0.1:5000", "1.0"), "version '1.0' is not SemVer 2"),
    (("127.0.0.1:5000", "1.0.0", "/nonexistent"), "no Chart.yaml in '/nonexistent'"),
])
def test_the_chart_push_refuses_bad_input(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    done = push_chart(tmp_path, *args)
    assert done.returncode == 2
    assert expected in one_line_error(done)


def test_the_node_drops_what_an_earlier_cluster_pulled_of_earlier_builds(tmp_path: Path) -> None:
    """registry.sh's `registry_old_pulls`, which `up` feeds containerd's listing (node.sh): the references
    of a pushed repository at another digest than the one just pushed — and nothing else."""
    pushed = tmp_path / "images.pushed"
    pushed.write_text("docker.io/pfslayout/operator:dev 127.0.0.1:5000/pfslayout/operator:dev@sha256:new\n"
                      "docker.io/pfslayout/mpi:dev 127.0.0.1:5000/pfslayout/mpi:dev@sha256:m1\n")
    listing = "\n".join(["docker.io/pfslayout/operator:dev", "docker.io/pfslayout/operator@sha256:new",
                         "docker.io/pfslayout/operator@sha256:old1", "docker.io/pfslayout/operator@sha256:old2",
                         "docker.io/pfslayout/operator-x@sha256:other", "docker.io/pfslayout/mpi@sha256:m1",
                         "registry.k8s.io/pause:3.10", "docker.io/pfslayout/orangefs@sha256:o0"])
    script = f'. {ROOT / "e2e" / "harness" / "cluster" / "registry.sh"}; registry_old_pulls "$1" "$2"'
    done = subprocess.run(["bash", "-c", script, "bash", listing, str(pushed)], capture_output=True, text=True,
                          timeout=30, check=True)
    assert done.stdout.split() == ["docker.io/pfslayout/operator@sha256:old1",
                                   "docker.io/pfslayout/operator@sha256:old2"]
