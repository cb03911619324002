"""The one place a test gets its tier: from the folder it lives in (pfstestkit.tiers.FOLDERS), so no test
is without one and `-m unit` selects every pure test whatever its file says. A test file outside every
tier's folder, or a `-m` naming no tier, fails the run before any test starts."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from pfstestkit.lanes import SERIAL, minutes_by_lane
from pfstestkit.scheduling import join_group
from pfstestkit.tiers import MARKERS, PlanError, tier_of, tiers_of_expression

# The MCA variable naming where Open MPI 4 puts mpirun's session directory (pfstestkit.probe and .shim
# launch through the environment, so one setting here reaches every mpirun a test starts).
OMPI_TMPDIR = "OMPI_MCA_orte_tmpdir_base"


def pytest_configure(config: pytest.Config) -> None:
    own_open_mpi_session_dir(config)
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    expr = config.option.markexpr
    if expr:
        try:
            tiers_of_expression(expr)
        except PlanError as err:
            raise pytest.UsageError(str(err)) from None


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test marked `serial` (it measures time or load, or changes what every test shares) runs in the
    serial group: alone, after every other test of a run side by side (pfstestkit.scheduling)."""
    if item.get_closest_marker("serial"):
        join_group(item, SERIAL)


def own_open_mpi_session_dir(config: pytest.Config) -> None:
    """Open MPI 4 keeps every mpirun's session directory under one per-user directory of /tmp and removes
    it when a job ends, so two mpiruns from workers side by side race on it and one fails with "A call to
    mkdir was unable to create the desired directory" (open-mpi/ompi#8510; CI lost a run to it). Each
    pytest process — every xdist worker runs this hook — gets a base of its own, set unconditionally: a
    worker inherits the controller's environment and must not share its base."""
    base = tempfile.mkdtemp(prefix="pfslayout-ompi-")
    os.environ[OMPI_TMPDIR] = base
    config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the tier must be on the item by then
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item.path)
        if tier is None:
            raise pytest.UsageError(f"{item.path} is in no tier's folder (pfstestkit.tiers.FOLDERS)")
        item.add_marker(tier)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist's scheduler for this suite (pfstestkit.scheduling): one unit per e2e lane and per test
    file elsewhere, the longest first, and the serial lane alone after all the others."""
    from pfstestkit.scheduling import LaneScheduling

    return LaneScheduling(config, log)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each e2e lane's minutes in a run side by side, under pytest's slowest durations: what
    pfstestkit.lanes.MINUTES is set from."""
    lanes = minutes_by_lane(rep for reports in terminalreporter.stats.values() for rep in reports)
    if lanes:
        terminalreporter.write_line("lane minutes (setup + call + teardown of its tests): " +
                                    ", ".join(f"{lane} {minutes:.1f}" for lane, minutes in lanes.items()))
