"""The product in the loop (issue 13 item 7), its pure half: the manifests the benchmark applies, the
operator's picks read back from LayoutPolicy status, and their score — the same scoring as `lab validate`.

The benchmark (lab/bench/product_loop.py) runs the operator itself on the test cluster's real node: an
OrangeFSCluster whose server pods' links it shapes like the lab's, a CostCalibration (the operator's probe
jobs and fit), LayoutPolicies whose `auto` rules describe held-out workloads, and a second CostCalibration
over request sizes the first never saw, used only for its measurements — every layout of every held-out
configuration, measured by the same probe. The operator's picks are scored on those measurements beside
the fitted model's own picks with the same parameters (they must agree: the operator plans with that
model) and the usual baselines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pfslab.score import Config, LabCell, parse_layout_key
from pfslayout.calibration import design_grid
from pfslayout.images import DEFAULT_MPI_IMAGE

API = "pfslayout.io/v1alpha1"
MAX_RULES = 32  # LayoutPolicy spec.rules maxItems
ROOT = "/loop"


def cluster_manifest(name: str, servers: int) -> dict[str, Any]:
    """The OrangeFSCluster: storage on tmpfs (as the lab's), no automatic calibration."""
    return {"apiVersion": API, "kind": "OrangeFSCluster", "metadata": {"name": name},
            "spec": {"servers": {"count": servers, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                     "storage": {"type": "emptyDir", "medium": "Memory", "size": "1Gi"},
                     "client": {"replicas": 1}, "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}


def calibration_manifest(name: str, cluster: str, sizes: Sequence[int], *, ranks: int, max_configs: int | None,
                         requests: int, repetitions: int, min_bytes: int = 0, baseline: bool = False
                         ) -> dict[str, Any]:
    """A CostCalibration on one client node (its probe pods) with ``ranks`` ranks: p = 1, 2, 4, …; small
    sizes make enough requests to move ``min_bytes`` per rank (spec.grid.minBytesPerRank); ``baseline``
    measures every configuration on the file system's default layout too (spec.grid.baseline)."""
    grid: dict[str, Any] = {"nodes": 1, "ranksPerNode": ranks, "requestSizes": sorted(sizes),
                            "requestsPerRank": requests, "repetitions": repetitions}
    if baseline:
        grid["baseline"] = True
    if min_bytes:
        grid["minBytesPerRank"] = min_bytes
    if max_configs is not None:
        grid["maxConfigs"] = max_configs
    return {"apiVersion": API, "kind": "CostCalibration", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster}, "probeImage": DEFAULT_MPI_IMAGE, "backend": "pvfs2",
                     "grid": grid, "batch": {"cellsPerJob": 64, "maxConcurrentJobs": 1},
                     "fit": {"variant": "corrected", "weighting": "relative", "minRSquared": 0},
                     "timeoutSeconds": 1800}}


def rule_path(index: int) -> str:
    return f"{ROOT}/c{index:02d}"


def workload(config: Config) -> dict[str, Any]:
    """The `auto` rule's workload for one configuration: what a user knows about such an application."""
    return {"processes": config.p, "procsPerNode": config.m, "requestSize": config.request_size,
            "readFraction": 1.0 if config.op == "read" else 0.0,
            "randomFraction": 1.0 if config.pattern == "random" else 0.0,
            "requestsPerProcess": config.requests_per_rank}


def policy_manifests(name: str, cluster: str, configs: Sequence[Config]) -> list[dict[str, Any]]:
    """LayoutPolicies with one `auto` rule per configuration (file per process), ``MAX_RULES`` each."""
    out = []
    for start in range(0, len(configs), MAX_RULES):
        rules = [{"path": rule_path(start + i), "mode": "auto", "fileSharing": "perProcess",
                  "auto": {"source": "workload", "workload": workload(c)}}
                 for i, c in enumerate(configs[start:start + MAX_RULES])]
        out.append({"apiVersion": API, "kind": "LayoutPolicy",
                    "metadata": {"name": f"{name}-{start // MAX_RULES}"},
                    "spec": {"clusterRef": {"name": cluster}, "rules": rules}})
    return out


def decision_key(layout: Mapping[str, Any]) -> str:
    """A rule's `status.rules[].layout` ({"layout": "2-D", "groups": 2, …}) as a lab layout key ("2-D:2")."""
    name = layout.get("layout")
    key = f"2-D:{layout.get('groups')}" if name == "2-D" else str(name)
    parse_layout_key(key)  # ValueError on anything the lab does not measure
    return key


def picks_from_status(statuses: Sequence[Mapping[str, Any]], count: int) -> list[str | None]:
    """The operator's pick per configuration index, from the policies' status (None: not decided yet)."""
    by_path: dict[str, str] = {}
    for st in statuses:
        for rule in st.get("rules") or []:
            if rule.get("layout"):
                by_path[rule["path"]] = decision_key(rule["layout"])
    return [by_path.get(rule_path(i)) for i in range(count)]


def matched(cells: Sequence[LabCell], configs: Sequence[Config], picks: Sequence[str | None]
            ) -> tuple[list[LabCell], list[str]]:
    """The measured cells in ``configs`` order with the operator's picks, only where both exist."""
    by_config = {Config(**{k: getattr(c, k) for k in Config.__dataclass_fields__}): c for c in cells}
    out_cells, out_picks = [], []
    for config, pick in zip(configs, picks):
        cell = by_config.get(config)
        if cell is not None and pick is not None and pick in cell.median:
            out_cells.append(cell)
            out_picks.append(pick)
    return out_cells, out_picks


def holdout_configs(servers: int, sizes: list[int], ranks: int, requests: int, repetitions: int,
                    min_bytes: int) -> list[Config]:
    """The configurations the operator's probe will measure for ``loop-holdout`` (the same design_grid)."""
    grid = design_grid(servers, 1, ranks, sizes=sizes, requests_per_rank=requests, repetitions=repetitions,
                       min_bytes_per_rank=min_bytes)
    seen: dict[Config, None] = {}
    for cell in grid.cells:
        seen.setdefault(Config(op=cell.op, pattern=cell.pattern, sharing=cell.sharing, p=cell.p, m=cell.m,
                               request_size=cell.request_size, requests_per_rank=cell.requests_per_rank))
    return sorted(seen, key=lambda k: k.sort_key())
