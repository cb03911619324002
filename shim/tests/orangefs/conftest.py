"""Fixtures of the probe's OrangeFS tier: loopback servers (pfstestkit.ofs_loopback)."""

from pfstestkit.ofs_loopback import orangefs, servers, workdir  # noqa: F401  (pytest fixtures)
