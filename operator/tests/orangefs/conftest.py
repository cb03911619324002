"""Fixtures of the OrangeFS tier: loopback servers and the MPICH build with ROMIO's pvfs2 driver
(pfstestkit.ofs_loopback, pfstestkit.romio), and the shim built against that MPICH."""

import subprocess
from pathlib import Path

import pytest

from pfstestkit.ofs_loopback import OrangeFS, orangefs, servers, workdir  # noqa: F401  (pytest fixtures)
from pfstestkit.romio import Mpich, mpich, romio_check  # noqa: F401  (pytest fixtures)

SHIM_DIR = Path(__file__).resolve().parents[3] / "shim"


@pytest.fixture(scope="session")
def shim_lib(orangefs: OrangeFS, mpich: Mpich, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """libpfsshim built against the same MPICH (its ROMIO has the pvfs2 driver), as images/build/shim.sh
    builds it for the MPI image."""
    build = tmp_path_factory.mktemp("shim-mpich-pvfs2")
    env = mpich.env(orangefs)
    for argv in (["cmake", "-S", str(SHIM_DIR), "-B", str(build), "-DPFSLAYOUT_BUILD_TESTS=OFF",
                  f"-DMPI_C_COMPILER={mpich.prefix / 'bin' / 'mpicc'}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                  "-DCMAKE_SKIP_RPATH=ON"],
                 ["cmake", "--build", str(build), "--target", "pfsshim", "-j", "2"]):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, env=env)
        assert result.returncode == 0, f"{argv}: {result.stdout[-3000:]}{result.stderr[-3000:]}"
    return build / "src" / "libpfsshim.so"
