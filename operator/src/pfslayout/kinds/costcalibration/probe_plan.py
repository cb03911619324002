"""The probe plan of one calibration run (pure): the designed grid, the directories that realise each
layout on the file system (with their hints), and the probe jobs the grid is cut into.

* Grid: `calibration.design_grid` on this platform (the cluster's server count, the spec's nodes and
  ranks per node), checked to identify all five parameters — else the plan is refused.
* Directories: one per layout and request size below `<mount>/.pfslayout/calibration/<name>/`, with the
  hints `planner.hints_for` gives a file-per-process layout at that size (the strip of 1-DH and 2-D
  depends on the request size), and with `fit.perServer` one directory per server pinned to it
  (layout LIST). The `pvfs2` backend realises each layout per file itself and ignores the hints; the
  `mpiio` backend (ROMIO) creates files through them — the same directories either way.
* Jobs: the cells sorted by request size and cut into chunks of `batch.cellsPerJob`; a job runs one
  `pfsprobe` per request size it holds (targets are per size), all cells on `grid.nodes` worker pods.
* Baseline (`grid.baseline`): every configuration once more on the file system's default layout, in a
  `default/s<size>` directory without hints; the probe reports those cells apart (`measurements.baseline`)
  and the fit never sees them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from pfslayout.calibration import GridCell, ProbeGrid, design_grid, server_grid
from pfslayout.calibration.grid import layout_key
from pfslayout.calibration.measurements import BASELINE
from pfslayout.errors import InputError
from pfslayout.k8s.meta import content_hash
from pfslayout.kinds.costcalibration.spec import CostCalibrationSpec
from pfslayout.planner.hints import KEY_DIST, KEY_LAYOUT, KEY_LIST, KEY_NUM, LAYOUT_LIST, hints_for, server_list

# The measurements of a run live in one ConfigMap (1 MiB); a measured cell takes ~400 bytes of compact
# pfsprobe/1 JSON with 5 repetitions, so 1500 cells leave room for the per-server probes and the index.
MAX_CELLS = 1500
PROBE_ROOT = ".pfslayout/calibration"


class PlanRefused(Exception):
    """The spec asks for a grid this cluster cannot run or that cannot identify the parameters."""

    def __init__(self, reason: str, field: str, message: str, fix: str) -> None:
        super().__init__(f"{field}: {message}; {fix}")
        self.reason = reason
        self.field = field


@dataclass(frozen=True)
class ProbeDir:
    key: str  # e.g. "1-DH/s4096", "2-D-g2/s65536", "server-1"
    path: str  # absolute, as clients see it below the mount path
    xattrs: dict[str, str]


@dataclass(frozen=True)
class Invocation:
    """One `pfsprobe` launch inside a job: cells of one request size (targets are per size)."""

    key: str  # measurement key, e.g. "j003-s4096" or "server-1-j007-s4096"
    grid: dict[str, Any]  # the pfsprobe-grid/1 document
    targets: tuple[tuple[str, str], ...]  # (layout key "1-DH" | "2-D:2", target path)
    servers: int  # pfsprobe --servers
    backend: str
    cells: int


@dataclass(frozen=True)
class ProbeJob:
    index: int
    server: int | None  # None: the global grid; j: the per-server probe of server j
    invocations: tuple[Invocation, ...]

    @property
    def cells(self) -> int:
        return sum(i.cells for i in self.invocations)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(i.key for i in self.invocations)


@dataclass(frozen=True)
class ProbePlan:
    grid: ProbeGrid
    dirs: tuple[ProbeDir, ...]
    jobs: tuple[ProbeJob, ...]
    servers: int

    @property
    def total_cells(self) -> int:
        return sum(j.cells for j in self.jobs)

    @property
    def digest(self) -> str:
        return content_hash(json.dumps([[asdict(d) for d in self.dirs],
                                        [[i.grid for i in j.invocations] for j in self.jobs]], sort_keys=True))


def _cpu(quantity: int | str) -> float:
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def baseline_cells(cells: list[GridCell]) -> list[GridCell]:
    """One cell on the default layout per configuration of ``cells`` (everything but layout and g)."""
    seen: dict[GridCell, None] = {}
    for c in cells:
        seen.setdefault(replace(c, layout=BASELINE, g=None), None)
    return list(seen)


def layout_dir(layout: str, g: int | None) -> str:
    return f"2-D-g{g}" if layout == "2-D" else layout


def probe_root(mount_path: str, name: str) -> str:
    return f"{mount_path.rstrip('/')}/{PROBE_ROOT}/{name}"


def _target(path: str, backend: str) -> str:
    # ROMIO picks its pvfs2 driver by the prefix (there is no kernel mount in the probe pods).
    return f"pvfs2:{path}" if backend == "mpiio" else path


def _grid_doc(cells: list[GridCell], servers: int, nodes: int, ranks_per_node: int) -> dict[str, Any]:
    return {"format": "pfsprobe-grid/1",
            "platform": {"servers": servers, "nodes": nodes, "ranks_per_node": ranks_per_node},
            "cells": [asdict(c) for c in cells]}


def _design(spec: CostCalibrationSpec, servers: int) -> ProbeGrid:
    g = spec.grid
    try:
        return design_grid(servers, g.nodes, g.ranks_per_node, sizes=g.request_sizes, ops=g.operations,
                           patterns=g.patterns, requests_per_rank=g.requests_per_rank, repetitions=g.repetitions,
                           max_configs=g.max_configs, variant=spec.fit.variant,
                           min_bytes_per_rank=g.min_bytes_per_rank)
    except InputError as err:
        field = "spec.grid.patterns" if len(g.patterns) < 2 else (
            "spec.clusterRef" if servers < 2 else "spec.grid")
        raise PlanRefused("NotIdentifiable", field, f"on {servers} servers: {err.problem}",
                          err.fix or "widen the grid") from None


def _check_size(spec: CostCalibrationSpec, grid: ProbeGrid, extra: int) -> None:
    g = spec.grid
    limits = (spec.resources.limits if spec.resources else None) or {}
    if "cpu" in limits and g.ranks_per_node > _cpu(limits["cpu"]):
        raise PlanRefused("GridTooLarge", "spec.grid.ranksPerNode",
                          f"{g.ranks_per_node} ranks per node exceed the probe container's CPU limit "
                          f"{limits['cpu']}: oversubscribed ranks measure CPU contention, not I/O",
                          "lower spec.grid.ranksPerNode or raise spec.resources.limits.cpu")
    total = len(grid.cells) + extra
    if total > MAX_CELLS:
        per_config = len(g.operations)
        room = max(5, (MAX_CELLS - extra) // per_config)
        fix = (f"set spec.grid.maxConfigs to at most {room}" if g.max_configs is None
               else f"lower spec.grid.maxConfigs to at most {room}")
        raise PlanRefused("GridTooLarge", "spec.grid.maxConfigs",
                          f"the grid has {total} cells, more than the {MAX_CELLS} one calibration run keeps",
                          fix + " (the greedy D-optimal selection keeps the most informative configurations)")


def _chunks(cells: list[GridCell], size: int) -> list[list[GridCell]]:
    ordered = sorted(cells, key=lambda c: (c.request_size, c.layout, c.g or 0, c.p, c.m, c.placement,
                                           c.pattern != "sequential", c.op != "write"))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def make_plan(spec: CostCalibrationSpec, name: str, servers: int, mount_path: str,
              server_urls: list[str]) -> ProbePlan:
    """The whole run, or PlanRefused naming the field to fix. `server_urls`: each server's BMI address in
    ordinal order (the cluster's `status.endpoints.servers[].url`), for the per-server pins."""
    grid = _design(spec, servers)
    g = spec.grid
    per_server = server_grid(g.ranks_per_node, sizes=tuple(g.request_sizes), ops=tuple(g.operations),
                             requests_per_rank=g.requests_per_rank, repetitions=g.repetitions,
                             min_bytes_per_rank=g.min_bytes_per_rank) \
        if spec.fit.per_server else None
    if spec.fit.per_server and len(server_urls) < servers:
        raise PlanRefused("ClusterNotReady", "spec.fit.perServer",
                          f"the cluster lists {len(server_urls)} server addresses for {servers} servers",
                          "wait for every server to be Ready")
    base = baseline_cells(grid.cells) if g.baseline else []
    _check_size(spec, grid, len(base) + (servers * len(per_server.cells) if per_server else 0))
    root = probe_root(mount_path, name)
    dirs: list[ProbeDir] = []
    for layout, gg in sorted({(c.layout, c.g) for c in grid.cells + base}, key=lambda x: (x[0], x[1] or 0)):
        for size in sorted({c.request_size for c in grid.cells}):
            # the baseline's directory has no hints: its files get what the file system gives by default
            xattrs = {} if layout == BASELINE else dict(hints_for(layout, gg, servers, "file-per-process", size).xattrs)
            dirs.append(ProbeDir(f"{layout_dir(layout, gg)}/s{size}", f"{root}/{layout_dir(layout, gg)}/s{size}",
                                 xattrs))
    jobs: list[ProbeJob] = []
    for chunk in _chunks(grid.cells + base, spec.batch.cells_per_job):
        index = len(jobs)
        invocations = []
        for size in sorted({c.request_size for c in chunk}):
            cells = [c for c in chunk if c.request_size == size]
            keys = sorted({(c.layout, c.g) for c in cells}, key=lambda x: (x[0], x[1] or 0))
            targets = tuple((layout_key(lay, gg), _target(f"{root}/{layout_dir(lay, gg)}/s{size}", spec.backend))
                            for lay, gg in keys)
            invocations.append(Invocation(f"j{index:03d}-s{size}", _grid_doc(cells, servers, g.nodes, g.ranks_per_node),
                                          targets, servers, spec.backend, len(cells)))
        jobs.append(ProbeJob(index, None, tuple(invocations)))
    if per_server is not None:
        for j in range(servers):
            path = f"{root}/server-{j}"
            pin = {KEY_LAYOUT: LAYOUT_LIST, KEY_LIST: server_list([server_urls[j]])}
            dirs.append(ProbeDir(f"server-{j}", path, {KEY_NUM: "1", KEY_DIST: "simple_stripe", **pin}))
            for chunk in _chunks([replace(c, placement="packed") for c in per_server.cells],
                                 spec.batch.cells_per_job):
                index = len(jobs)
                invocations = [
                    Invocation(f"server-{j}-j{index:03d}-s{size}",
                               _grid_doc([c for c in chunk if c.request_size == size], 1, 1, g.ranks_per_node),
                               (("1-DV", _target(path, "mpiio")),), 1, "mpiio",
                               sum(1 for c in chunk if c.request_size == size))
                    for size in sorted({c.request_size for c in chunk})]
                jobs.append(ProbeJob(index, j, tuple(invocations)))
    return ProbePlan(grid=grid, dirs=tuple(dirs), jobs=tuple(jobs), servers=servers)
