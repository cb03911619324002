"""The lab tests' shared set-up (test_lab_smoke.py, test_lab_hybrid.py): a lab of their own — prefix,
subnet and state directory — the host builds located, and a skip with `lab check`'s reason where the lab
cannot run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfstestkit import REPO

LAB = REPO / "lab" / "lab"
TREES = ("PFSLAYOUT_MPICH_PREFIX", "PFSLAYOUT_SHIM_PREFIX", "PFSLAYOUT_IOR_PREFIX")


def lab_env(prefix: str, net: str, tmp_prefix: str) -> Iterator[dict[str, str]]:
    """The environment of a lab named ``prefix`` on ``net``.0/24; the lab is brought down afterwards."""
    # not under pytest's tmp_path (0700 under root): the servers run as nobody and read fs.conf from here
    parent = Path(tempfile.mkdtemp(prefix=tmp_prefix))
    parent.chmod(0o755)
    env = {**os.environ, "PFSLAYOUT_LAB_PREFIX": prefix, "PFSLAYOUT_LAB_NET": net,
           "PFSLAYOUT_LAB_DIR": str(parent / "state"), "PFSLAYOUT_PYTHON": sys.executable}
    if not env.get("ORANGEFS_PREFIX"):
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip(env.get("PFSLAYOUT_ORANGEFS_UNAVAILABLE") or "ORANGEFS_PREFIX not set: run e2e/test-all.sh "
                    "(it builds OrangeFS) or `eval \"$(images/build/host.sh env)\"`")
    if not all(env.get(v) for v in TREES):
        # the test command builds these trees for the images; here they are only located (cached)
        trees = subprocess.run(["bash", "-c", f'eval "$({REPO}/images/build/host.sh env)" && env -0'], env=env,
                               capture_output=True, timeout=3600, check=True).stdout.decode().split("\0")
        env.update(dict(kv.split("=", 1) for kv in trees if kv.startswith(tuple(f"{v}=" for v in TREES))))
    checked = subprocess.run([str(LAB), "check"], env=env, capture_output=True, text=True, timeout=120, check=False)
    if checked.returncode == 3:
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip("the lab cannot run here: " + checked.stderr.strip().replace("\n", "; "))
    assert checked.returncode == 0, checked.stderr
    yield env
    subprocess.run([str(LAB), "down"], env=env, capture_output=True, text=True, timeout=300, check=False)
    shutil.rmtree(parent, ignore_errors=True)


def server_ip(env: dict[str, str], i: int) -> str:
    """Server i's address in that lab (pfslab.net: NET.(11 + i))."""
    return f"{env['PFSLAYOUT_LAB_NET']}.{11 + i}"


def lab(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`lab/lab ARGS` in that environment."""
    return subprocess.run([str(LAB), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
