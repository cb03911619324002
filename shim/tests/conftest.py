"""Fixtures for the shim's MPI integration tests (helpers in shim_helpers.py)."""

from __future__ import annotations

import shutil

import pytest

from pfstestkit.shim import BUILD_DIR, FLAVOURS, MpiBuild


@pytest.fixture(params=FLAVOURS)
def mpi(request: pytest.FixtureRequest) -> MpiBuild:
    build = MpiBuild(request.param, BUILD_DIR / request.param)
    launcher = "mpirun.openmpi" if request.param == "openmpi" else "mpirun.mpich"
    if shutil.which(launcher) is None:
        pytest.skip(f"{launcher} is not installed")
    if not build.lib.exists() or not build.program("mpiio_mix").exists():
        pytest.skip(f"{build.root} is not built; run shim/build.sh (e2e/test-all.sh does)")
    return build
