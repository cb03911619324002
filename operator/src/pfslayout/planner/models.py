"""Planner inputs and results: pydantic models, JSON-serialisable as they are."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Sharing = Literal["file-per-process", "shared"]
LayoutName = Literal["1-DV", "1-DH", "2-D"]
TargetKind = Literal["directory", "file", "workload"]
Mode = Literal["static", "hybrid"]
Source = Literal["trace", "darshan-counters", "workload"]


class SizeBin(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int = Field(ge=0, description="request size, bytes")
    weight: float = Field(gt=0, description="relative share of requests of this size")


class WorkloadDescription(BaseModel):
    """What a user knows about an application without a trace (a LayoutPolicy `auto` rule's workload)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="workload", min_length=1, description="file or directory the layout is for")
    processes: int = Field(ge=1, description="MPI processes doing I/O concurrently (p)")
    procs_per_node: int = Field(default=1, ge=1, description="processes per client node (m)")
    request_sizes: list[SizeBin] = Field(min_length=1, description="request-size histogram")
    read_fraction: float = Field(default=1.0, ge=0, le=1, description="share of requests that are reads")
    sharing: Sharing = Field(default="file-per-process")
    random_fraction: float = Field(default=0.0, ge=0, le=1, description="share of random accesses")
    requests_per_process: int = Field(default=1, ge=1, description="requests each process issues")

    @field_validator("request_sizes", mode="before")
    @classmethod
    def _histogram_forms(cls, value: object) -> object:
        # also accept {"4096": 3, "1048576": 1} — the natural way to write a histogram in YAML
        if isinstance(value, dict):
            return [{"size": int(k), "weight": v} for k, v in value.items()]
        return value

    @model_validator(mode="after")
    def _m_within_p(self) -> WorkloadDescription:
        if self.procs_per_node > self.processes:
            raise ValueError(f"procs_per_node ({self.procs_per_node}) exceeds processes ({self.processes})")
        return self


class CandidateCost(BaseModel):
    """One candidate layout's predicted total over the workload, and its split (seconds)."""

    layout: LayoutName
    g: int | None = None
    label: str
    T_e: float
    T_x: float
    T_s: float
    T_rw: float
    network: float
    storage: float
    total: float


class Hints(BaseModel):
    """OrangeFS directory hints that realise a layout (set with setfattr/pvfs2-xattr on the directory)."""

    xattrs: dict[str, str]
    num_dfiles: int
    dist_name: str
    strip_size: int | None = None
    strips: list[int] | None = None  # varstrip_dist per-datafile sizes (heterogeneous servers)
    # heterogeneous servers, one datafile per file: server index for each file (seed 002 coarse balance)
    file_placement: list[int] | None = None
    notes: list[str] = Field(default_factory=list)


class Replica(BaseModel):
    label: str
    suffix: str
    hints: Hints
    total: float


class HybridRecommendation(BaseModel):
    """A replica set instead of one static layout (docs/seeds.md §3.4, §6 B3)."""

    replicas: list[Replica]
    predicted_total: float = Field(description="Σ per request of the cheapest replica's cost, seconds")
    storage_factor: int = Field(description="copies of the data kept")
    reason: str


class AggregatorCost(BaseModel):
    """Two-phase collective I/O with ``aggregators`` aggregators, per call, seconds."""

    aggregators: int
    io: float
    shuffle: float = Field(description="the slowest aggregator's shuffle, 004 Eq. (1)")
    total: float


class HioSchedule(BaseModel):
    """The aggregators' reads in one server queue (004 Fig. 3): FIFO vs the HIO order, makespans in s."""

    fifo_order: list[str]
    fifo_makespan: float
    hio_order: list[str]
    hio_makespan: float


class CollectiveAdvice(BaseModel):
    """Collective-buffering hints from the shuffle cost (docs/cost-model.md, "Collective I/O")."""

    ranks: int
    reads: int
    writes: int
    per_rank_bytes: int
    independent: float = Field(description="per call, every rank its own request, seconds")
    candidates: list[AggregatorCost]
    two_phase: bool
    cb_nodes: int | None
    hints: dict[str, str | int] = Field(description="ROMIO MPI_Info hints (the shim config's rule.collective)")
    aggregator_ranks: list[int]
    shuffle: list[float]
    acceptable_delay: list[float]
    hio: HioSchedule | None = None
    explanation: str


class Decision(BaseModel):
    target: str
    kind: TargetKind
    sharing: Sharing
    requests: int
    bytes: int
    read_fraction: float
    random_fraction: float
    dominant_size: int
    candidates: list[CandidateCost]
    choice: str
    choice_layout: Literal["1-DV", "1-DH", "2-D"]
    choice_g: int | None
    margin: float | None = Field(description="(second best − best) / best; None with one candidate")
    mode: Mode
    hints: Hints
    hybrid: HybridRecommendation | None = None
    explanation: str
    # what the workload was derived from, and what stood in for what that source cannot say
    source: Source = "workload"
    assumptions: list[str] = Field(default_factory=list)
    collective: CollectiveAdvice | None = None


class Plan(BaseModel):
    format: Literal["pfslayout-plan/1"] = "pfslayout-plan/1"
    servers: int
    variant: str
    params: dict[str, float | bool]  # CostParams.scalars(), and overlap: true when the model takes the larger side
    heterogeneous: bool
    delta: float
    groups_considered: list[int]
    groups_note: str
    decisions: list[Decision]
