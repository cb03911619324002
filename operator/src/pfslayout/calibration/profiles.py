"""Named calibration grids: what `OrangeFSCluster.spec.calibration.profile` (`quick`, `standard`) means.

A profile fixes the parts of the probe grid that trade time for precision — request sizes, how many
configurations are measured, requests per rank and the bytes each rank moves, repetitions — while the
platform (servers, client nodes, ranks per node) comes from the cluster. ``standard`` is CostCalibration's
default ``spec.grid`` (crds/kinds.py) with ``minBytesPerRank`` 4 MiB (the field has no CRD default: an
upgrade must not change the plan of a calibration in flight); ``quick``, what an OrangeFSCluster's
automatic calibration runs, measures every configuration (the full factorial, as the lab's benchmark
calibration does) at three sizes, with fewer requests per rank and no 64 KiB size, so that it finds what
``standard`` finds — the write terms and the shared-core term where the platform shows them — in a
fraction of the time. Measured on the test cluster's real node, 4 servers (docs/operator.md, "Calibration
profiles"): 24 D-optimal configurations at two sizes (the previous quick) fitted the five terms only,
R² 0.78-0.93 run to run; this grid fitted beta_write and e_shared as ``standard`` did in both its runs, in
113 s against 149-158 s (it moves half the bytes: on the 4-server example at 200 Mbit/s, minutes). Its small
size is 8 KiB, not 4 KiB: layouts are realised with strips of at least 4 KiB, so a 4 KiB request
touches one server under every layout and its cells could not tell e from α on 2 servers. ``standard``
also probes 32 KiB (``pfslayout.request_sizes``): the size at which the cost of writes split into small pieces
(``v_small_write``, docs/cost-model.md "Small writes") showed on the 4-server product loop and was fitted
(`--profile standard` there: docs/results.md); quick's 8 KiB cells identify the column too, but their
small-write bytes are too few to weigh against the per-message terms. Both are checked to identify all
five parameters on 2 or more servers and, on 4 or more with two ranks or more, the write, shared-core and
small-write columns too (operator/tests/unit/test_calibration_profiles.py); the CRD's enum
and defaults are checked against this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pfslayout.calibration.grid import ProbeGrid, design_grid
from pfslayout.errors import InputError
from pfslayout.request_sizes import DEFAULT_SIZES

KIB = 1 << 10
MIB = 1 << 20


@dataclass(frozen=True)
class GridProfile:
    name: str
    sizes: tuple[int, ...]
    max_configs: int | None  # None: the full factorial
    requests_per_rank: int
    repetitions: int
    min_bytes_per_rank: int

    def grid_spec(self) -> dict[str, Any]:
        """The CostCalibration ``spec.grid`` fields this profile stands for (CRD names)."""
        spec: dict[str, Any] = {"requestSizes": list(self.sizes), "requestsPerRank": self.requests_per_rank,
                                "repetitions": self.repetitions, "minBytesPerRank": self.min_bytes_per_rank}
        if self.max_configs is not None:
            spec["maxConfigs"] = self.max_configs
        return spec


PROFILES: dict[str, GridProfile] = {
    # quick: 4 MiB per rank makes its 8 KiB cells 512 requests long (a cell of 8 measured noise); 5
    # repetitions: with 3 the same grid fitted R² 0.82, near the default minRSquared 0.8.
    # standard: the 4 MiB the performance lab validated the model with
    "quick": GridProfile("quick", sizes=(8 * KIB, MIB, 4 * MIB), max_configs=None, requests_per_rank=8,
                         repetitions=5, min_bytes_per_rank=4 * MIB),
    "standard": GridProfile("standard", sizes=tuple(DEFAULT_SIZES), max_configs=None, requests_per_rank=16,
                            repetitions=5, min_bytes_per_rank=4 * MIB),
}
DEFAULT_PROFILE = "quick"


def get_profile(name: str) -> GridProfile:
    if name not in PROFILES:
        raise InputError("--profile", f"unknown calibration profile {name!r}", f"use {' or '.join(PROFILES)}")
    return PROFILES[name]


def profile_grid(profile: str, servers: int, nodes: int, ranks_per_node: int, *, variant: str = "corrected",
                 sizes: list[int] | None = None, max_configs: int | None = None,
                 min_bytes_per_rank: int | None = None) -> ProbeGrid:
    """The probe grid of a profile on this platform; explicit sizes, max_configs or min_bytes_per_rank
    override the profile's."""
    p = get_profile(profile)
    return design_grid(servers, nodes, ranks_per_node, sizes=sizes or p.sizes,
                       max_configs=max_configs if max_configs is not None else p.max_configs,
                       requests_per_rank=p.requests_per_rank, repetitions=p.repetitions, variant=variant,
                       min_bytes_per_rank=p.min_bytes_per_rank if min_bytes_per_rank is None else min_bytes_per_rank)
