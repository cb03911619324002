"""Typed CostCalibration spec, mirroring `crds/costcalibrations.yaml` (the CRD schema is the contract).

Defaults repeat the CRD's so the tests and `pfslayout` build the same spec without a cluster; unknown
fields are ignored so a newer CRD does not break an older operator.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pfslayout import naming
from pfslayout.images import DEFAULT_MPI_IMAGE
from pfslayout.kinds.orangefscluster.spec import Resources, Toleration
from pfslayout.kinds.specs import parse_model
from pfslayout.request_sizes import DEFAULT_SIZES


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class ClusterRef(_Model):
    name: str = Field(min_length=1)


class Grid(_Model):
    nodes: int = Field(2, ge=1, le=64)
    ranks_per_node: int = Field(2, alias="ranksPerNode", ge=1, le=64)
    request_sizes: tuple[int, ...] = Field(DEFAULT_SIZES, alias="requestSizes", min_length=2, max_length=24)
    operations: tuple[Literal["write", "read"], ...] = Field(("write", "read"), min_length=1, max_length=2)
    patterns: tuple[Literal["sequential", "random"], ...] = Field(("sequential", "random"), min_length=1,
                                                                   max_length=2)
    requests_per_rank: int = Field(16, alias="requestsPerRank", ge=1, le=65536)
    min_bytes_per_rank: int = Field(0, alias="minBytesPerRank", ge=0, le=1 << 30)
    repetitions: int = Field(5, ge=1, le=10000)
    max_configs: int | None = Field(None, alias="maxConfigs", ge=5, le=4096)
    baseline: bool = False


class Fit(_Model):
    variant: Literal["corrected", "printed"] = "corrected"
    weighting: Literal["relative", "absolute"] = "relative"
    per_server: bool = Field(False, alias="perServer")
    # 0.7 from measured fits (R² of log times): 0.98-0.995 on the real node, 0.78-0.92 on kind on one 2-core
    # machine (docs/operator.md "What minRSquared judges")
    min_r_squared: float = Field(0.7, alias="minRSquared", ge=0, le=1)


class Batch(_Model):
    cells_per_job: int = Field(64, alias="cellsPerJob", ge=1, le=4096)
    max_concurrent_jobs: int = Field(1, alias="maxConcurrentJobs", ge=1, le=16)


class CostCalibrationSpec(_Model):
    cluster_ref: ClusterRef = Field(alias="clusterRef")
    probe_image: str = Field(DEFAULT_MPI_IMAGE, alias="probeImage", min_length=1)
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", alias="imagePullPolicy")
    grid: Grid = Grid()
    fit: Fit = Fit()
    backend: Literal["pvfs2", "mpiio"] = "pvfs2"
    batch: Batch = Batch()
    timeout_seconds: int = Field(1800, alias="timeoutSeconds", ge=10, le=86400)
    config_map_name: str | None = Field(None, alias="configMapName")
    history_limit: int = Field(5, alias="historyLimit", ge=1, le=50)
    resources: Resources | None = None
    node_selector: dict[str, str] | None = Field(None, alias="nodeSelector")
    tolerations: list[Toleration] | None = None


def parse_spec(raw: dict[str, Any] | None, probe_image: str = DEFAULT_MPI_IMAGE) -> CostCalibrationSpec:
    """The typed spec of a CR's `.spec`; any violation is one InputError naming the field. `probe_image` is
    the image of a spec that names none: the operator's (Settings.mpi_image, the chart's `images.mpi`)."""
    if "probeImage" not in (raw or {}):
        raw = {**(raw or {}), "probeImage": probe_image}
    return parse_model(CostCalibrationSpec, raw, "CostCalibration")


def params_configmap(name: str, spec: CostCalibrationSpec) -> str:
    return spec.config_map_name or naming.params_configmap(name)
