"""Calibration of the cost model: a designed probe grid, measurement readers (pfsprobe/1, IOR JSON) and
the non-negative least-squares fit of e, v, α_seq, α_rand and β (docs/calibration.md)."""

from pfslayout.calibration.design import PARAMS, Identifiability, design_matrix, identifiability
from pfslayout.calibration.fit import FitResult, fit
from pfslayout.calibration.grid import GRID_FORMAT, GridCell, ProbeGrid, design_grid, requests_for, useful_groups
from pfslayout.calibration.measurements import (
    MEASUREMENT_FORMATS,
    PROBE_FORMAT,
    Cell,
    Measurements,
    load_measurements,
    merge_measurements,
    parse_ior,
    parse_probe,
)
from pfslayout.calibration.per_server import ServerFit, fit_server, server_grid, with_servers
from pfslayout.calibration.profiles import DEFAULT_PROFILE, PROFILES, GridProfile, profile_grid
from pfslayout.calibration.synthetic import model_time, simulate_probe

__all__ = [
    "DEFAULT_PROFILE",
    "GRID_FORMAT",
    "MEASUREMENT_FORMATS",
    "PARAMS",
    "PROBE_FORMAT",
    "PROFILES",
    "Cell",
    "FitResult",
    "GridCell",
    "GridProfile",
    "Identifiability",
    "Measurements",
    "ProbeGrid",
    "ServerFit",
    "design_grid",
    "design_matrix",
    "fit",
    "fit_server",
    "identifiability",
    "load_measurements",
    "merge_measurements",
    "model_time",
    "parse_ior",
    "parse_probe",
    "profile_grid",
    "requests_for",
    "server_grid",
    "simulate_probe",
    "useful_groups",
    "with_servers",
]
