"""Fixtures of the OrangeFS tier (marker `orangefs`); see ofs_loopback.py."""

from ofs_loopback import orangefs, servers, workdir  # noqa: F401  (pytest fixtures)
