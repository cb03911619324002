"""images/build/oci.py's `check`, which the kind scripts run on every archive they build: it passes an
archive of the name and config asked for and refuses, in one line with exit 2, one that differs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pfstestkit import REPO

OCI = REPO / "images" / "build" / "oci.py"


def oci(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(OCI), *args], capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("oci")
    (tmp / "hello").write_text("#!/bin/sh\necho hello\n")
    out = tmp / "hello.tar"
    done = oci("rootfs-files", str(out), "--name", "localhost/test/hello:1", "--file", f"{tmp / 'hello'}:/hello:0755",
               "--entrypoint", '["/hello"]', "--stop-signal", "SIGRTMIN+3")
    assert done.returncode == 0, done.stderr
    return out


def test_check_passes_the_archive_it_was_asked_for(archive: Path) -> None:
    done = oci("check", str(archive), "--name", "localhost/test/hello:1", "--entrypoint", '["/hello"]')
    assert done.returncode == 0, done.stderr
    assert "localhost/test/hello:1" in done.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--name", "localhost/test/other:1", "--entrypoint", '["/hello"]'],
     "io.containerd.image.name is localhost/test/hello:1"),
    (["--name", "localhost/test/hello:1", "--entrypoint", '["/other"]'], 'Entrypoint is ["/hello"], not ["/other"]'),
    (["--name", "localhost/test/hello:1", "--entrypoint", '["/hello"]', "--cmd", '["sh"]'], "Cmd is null"),
])
def test_check_refuses_a_different_archive_in_one_line(archive: Path, args: list[str], says: str) -> None:
    done = oci("check", str(archive), *args)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_check_refuses_a_file_that_is_no_archive(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar"
    junk.write_text("not a tar")
    done = oci("check", str(junk), "--name", "x")
    assert done.returncode == 2 and "not a readable OCI archive" in done.stderr, done.stderr
