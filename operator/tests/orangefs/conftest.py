"""Fixtures of the OrangeFS tier: loopback servers and the MPICH build with ROMIO's pvfs2 driver
(pfstestkit.ofs_loopback, pfstestkit.romio)."""

from pfstestkit.ofs_loopback import orangefs, servers, workdir  # noqa: F401  (pytest fixtures)
from pfstestkit.romio import mpich, romio_check  # noqa: F401  (pytest fixtures)
