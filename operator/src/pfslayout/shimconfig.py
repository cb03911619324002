"""The shim config (`pfsshim-config/1`, docs/shim-config.md) as typed models, and its rendering to JSON.

The C shim parses this file with shim/src/config.c; the operator renders it. Both sides refuse an unknown
key, and every rule the C parser enforces is checked here too, so a config this module renders is one the
shim accepts. The contract is tested from both sides: operator/tests/vectors/shim-configs.json (written by
generate_shim_configs.py from these models) is read by the C unit test test_config_vectors, and
shim/tests/test_shim_config_check.py feeds freshly rendered configs to `pfsshim-check`, the checker built
from the shim's own parser.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    model_validator,
)

if TYPE_CHECKING:
    from pfslayout.costmodel.params import CostParams

FORMAT: Literal["pfsshim-config/1"] = "pfsshim-config/1"
MAX_REPLICAS = 8  # PFS_MAX_REPLICAS
MAX_HINTS = 16  # PFS_MAX_HINTS, per rule and per replica (derived striping hints included)
MAX_HINT_KEY = 63  # pfs_hint.key is char[64]
MAX_HINT_VALUE = 127  # pfs_hint.value is char[128]
MAX_SERVERS = 1 << 20
MAX_STRIP = 1 << 40
MAX_TRACE_RECORDS = 1 << 36
MAX_QUEUE_LIMIT = 1 << 40

Layout = Literal["1-DV", "1-DH", "2-D", "auto"]
# Strict scalars throughout: the C parser takes a JSON integer only as an integer (4.0 is refused), a
# boolean only as true/false, and never a number written as a string.
Number = StrictFloat | StrictInt
HintValue = Annotated[StrictStr, StringConstraints(max_length=MAX_HINT_VALUE)] | Annotated[StrictInt, Field(ge=0)]


_ROMIO_PREFIX = re.compile(r"^[A-Za-z0-9_]+:")


def _bare(path: str) -> str:
    """The path without a ROMIO prefix (`ufs:/a` → `/a`), as the C side reads it (pfs_romio_bare)."""
    return _ROMIO_PREFIX.sub("", path, count=1)


def normalise_path(path: str) -> str:
    """What the shim compares: trailing '/' dropped (the root stays '/')."""
    bare = _bare(path)
    keep = len(path) - len(bare)
    tail = bare.rstrip("/") or "/"
    return path[:keep] + tail


def _check_path(path: str, field: str) -> str:
    if not path:
        raise ValueError(f"{field}: must be a non-empty path")
    if not _bare(path).startswith("/"):
        raise ValueError(f"{field}: must be an absolute path (optionally with a ROMIO prefix such as ufs:)")
    return path


def _check_hints(hints: dict[str, HintValue], field: str, derived: int = 0) -> None:
    for key in hints:
        if not 1 <= len(key) <= MAX_HINT_KEY:
            raise ValueError(f"{field}.{key}: hint name must be 1..{MAX_HINT_KEY} characters")
    if len(hints) + derived > MAX_HINTS:
        raise ValueError(f"{field}: too many hints (at most {MAX_HINTS}, striping_unit/striping_factor included)")


class _Strict(BaseModel):
    # unknown fields are refused, as the C parser refuses unknown keys
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerOverride(_Strict):
    """A per-server parameter override; the shim accepts and ignores these (one value per request)."""

    name: StrictStr | None = None
    e: Number | None = Field(default=None, ge=0)
    v: Number | None = Field(default=None, ge=0)
    alpha_seq: Number | None = Field(default=None, ge=0)
    alpha_rand: Number | None = Field(default=None, ge=0)
    beta: Number | None = Field(default=None, gt=0)


class ShimParams(_Strict):
    """The five cost-model parameters, SI units (docs/cost-model.md), and optionally a write's own e and
    beta (``e_write``, ``beta_write``; unset, writes cost with e and beta — CostParams.for_op) and the cost of
    every message of a round on shared cores (``e_shared``; unset, none), the cost per byte of a write split into
    pieces below the small-I/O limit (``v_small_write``; unset, none), and whether network and storage overlap
    (``overlap``; unset, they add up)."""

    e: Number = Field(ge=0, allow_inf_nan=False)
    v: Number = Field(ge=0, allow_inf_nan=False)
    alpha_seq: Number = Field(ge=0, allow_inf_nan=False)
    alpha_rand: Number = Field(ge=0, allow_inf_nan=False)
    beta: Number = Field(ge=0, allow_inf_nan=False)
    e_write: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    beta_write: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    e_shared: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    v_small_write: Number | None = Field(default=None, ge=0, allow_inf_nan=False)
    overlap: StrictBool | None = None  # true: a request takes the larger of its network and storage sides
    servers: list[ServerOverride] | None = None

    @classmethod
    def of(cls, params: CostParams) -> ShimParams:
        """The shim's copy of ``params``: every term the router costs a request with."""
        return cls(e=params.e, v=params.v, alpha_seq=params.alpha_seq, alpha_rand=params.alpha_rand,
                   beta=params.beta, e_write=params.e_write, beta_write=params.beta_write,
                   e_shared=params.e_shared, v_small_write=params.v_small_write, overlap=params.overlap)


class Replica(_Strict):
    dir: StrictStr
    layout: Layout
    g: StrictInt | None = Field(default=None, ge=1)
    strip_size: StrictInt | None = Field(default=None, ge=1, le=MAX_STRIP)
    datafiles: StrictInt | None = Field(default=None, ge=1)
    # > 1: pinned placement — each file's copy in <dir>/slot-<slot_of(name)>, a directory the operator
    # pins to its own servers (planner.hints.slot_dirs)
    slots: StrictInt | None = Field(default=None, ge=1)
    hints: dict[str, HintValue] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Replica:
        _check_path(self.dir, "dir")
        if self.layout == "2-D" and self.g is None:
            raise ValueError("g: required for layout 2-D (the number of storage groups)")
        if self.layout == "auto" and self.strip_size is None:
            raise ValueError("strip_size: required for layout auto (requests are classified by strip size)")
        hints = self.hints or {}
        derived = sum(1 for key, val in (("striping_unit", self.strip_size), ("striping_factor", self.datafiles))
                      if val is not None and key not in hints)
        _check_hints(hints, "hints", derived)
        return self


CbMode = Literal["enable", "disable", "automatic"]


class CollectiveHints(_Strict):
    """ROMIO collective-buffering hints the planner recommends (docs/cost-model.md, "Collective I/O"); the
    shim adds them at **every** open of a file under the rule (ROMIO reads them at open), not only at create."""

    cb_nodes: StrictInt | None = Field(default=None, ge=1, le=MAX_SERVERS)
    cb_buffer_size: StrictInt | None = Field(default=None, ge=1, le=MAX_STRIP)
    romio_cb_read: CbMode | None = None
    romio_cb_write: CbMode | None = None

    @model_validator(mode="after")
    def _some(self) -> CollectiveHints:
        if all(v is None for v in (self.cb_nodes, self.cb_buffer_size, self.romio_cb_read, self.romio_cb_write)):
            raise ValueError("set at least one of cb_nodes, cb_buffer_size, romio_cb_read, romio_cb_write")
        return self


class Spread(_Strict):
    """Where file-per-process files start (docs/shim-config.md, "spread"): file k a process creates under the
    rule (k = world rank + world size × its earlier creates) gets its ``datafiles`` datafiles on servers
    k·d … k·d + d − 1 mod n (``spread_servers``), through ROMIO's pvfs2 hint ``romio_pvfs2_server_list``."""

    datafiles: StrictInt = Field(ge=1, le=MAX_SERVERS)


def spread_servers(k: int, d: int, n: int) -> list[int]:
    """The servers of file k under a spread of d datafiles over n: the twin of the shim's pfs_spread_list."""
    if not (k >= 0 and 1 <= d <= n):
        raise ValueError(f"spread of file {k}: needs k >= 0 and 1 <= d ({d}) <= n ({n})")
    return [(k * d + i) % n for i in range(d)]


class Rule(_Strict):
    path: StrictStr
    hints: dict[str, HintValue] | None = None
    replicas: list[Replica] | None = Field(default=None, min_length=1, max_length=MAX_REPLICAS)
    collective: CollectiveHints | None = None
    spread: Spread | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Rule:
        _check_path(self.path, "path")
        if self.hints is None and self.replicas is None and self.collective is None and self.spread is None:
            raise ValueError("needs hints (stripe hints at create), replicas (a replica set), collective "
                             "(collective-buffering hints at open) or spread (where file-per-process files start)")
        if self.spread is not None and self.replicas is not None:
            raise ValueError("spread: a replica set places its copies itself (replicas[].slots); drop spread")
        if self.hints is not None:
            _check_hints(self.hints, "hints")
        dirs = [normalise_path(r.dir) for r in self.replicas or []]
        for i, d in enumerate(dirs):
            if d in dirs[:i]:
                raise ValueError(f"replicas[{i}].dir: {d} is used by replicas[{dirs.index(d)}] too")
        return self


class TraceSettings(_Strict):
    enabled: StrictBool = False
    dir: StrictStr | None = None
    job_id: Annotated[StrictStr, StringConstraints(min_length=1, max_length=128, pattern=r"^[^/]+$")] | None = None
    max_records: StrictInt | None = Field(default=None, ge=1, le=MAX_TRACE_RECORDS)

    @model_validator(mode="after")
    def _consistent(self) -> TraceSettings:
        if self.dir is not None:
            _check_path(self.dir, "dir")
        if self.enabled and self.dir is None:
            raise ValueError("dir: required when enabled is true")
        return self


class StatsSettings(_Strict):
    dir: StrictStr

    @model_validator(mode="after")
    def _consistent(self) -> StatsSettings:
        _check_path(self.dir, "dir")
        return self


class LazySync(_Strict):
    queue_limit_bytes: StrictInt | None = Field(default=None, ge=0, le=MAX_QUEUE_LIMIT)
    background: StrictBool | None = None
    posix: StrictBool | None = None
    alongside: StrictBool | None = None  # MPI-only copies written with the write (default) or replayed later


class Route(_Strict):
    """Plain paths a program opens under `path` are opened with the ROMIO prefix `prefix` (e.g. `pvfs2:`):
    an unmodified program reaches OrangeFS through ROMIO's driver without a kernel mount."""

    path: StrictStr
    prefix: StrictStr

    @model_validator(mode="after")
    def _consistent(self) -> Route:
        _check_path(self.path, "path")
        if _bare(self.path) != self.path:
            raise ValueError("path: must be a plain path (no ROMIO prefix): the paths opened under it get prefix")
        if not self.prefix or _bare(self.prefix) != "":
            raise ValueError('prefix: must be a ROMIO file-system prefix such as "pvfs2:" (letters, digits or _ '
                             "and a colon)")
        return self


class ShimConfig(_Strict):
    """One `pfsshim-config/1` document (docs/shim-config.md, "Fields")."""

    format: Literal["pfsshim-config/1"] = FORMAT
    params: ShimParams | None = None
    variant: Literal["corrected", "printed"] | None = None
    servers: StrictInt | None = Field(default=None, ge=1, le=MAX_SERVERS)
    ranks_per_node: StrictInt | None = Field(default=None, ge=1, le=MAX_SERVERS)
    rules: list[Rule] | None = None
    trace: TraceSettings | None = None
    stats: StatsSettings | None = None
    lazy_sync: LazySync | None = None
    route: Route | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ShimConfig:
        rules = self.rules or []
        if any(r.replicas for r in rules):
            if self.params is None:
                raise ValueError("params: required when a rule has replicas (the router costs each request)")
            if self.servers is None:
                raise ValueError("servers: required when a rule has replicas (the number of file servers n)")
        for i, rule in enumerate(rules):
            if rule.spread is not None:
                if self.servers is None:
                    raise ValueError("servers: required when a rule has spread (the number of file servers n)")
                if rule.spread.datafiles > self.servers:
                    raise ValueError(f"rules[{i}].spread.datafiles: must be 1..servers ({self.servers})")
        paths = [normalise_path(r.path) for r in rules]
        for i, p in enumerate(paths):
            if p in paths[:i]:
                raise ValueError(f"rules[{i}].path: {p} is also rules[{paths.index(p)}].path; merge the two")
        for i, rule in enumerate(rules):
            for j, rep in enumerate(rule.replicas or []):
                where = f"rules[{i}].replicas[{j}]"
                assert self.servers is not None  # checked above for any rule with replicas
                if rep.g is not None and rep.g > self.servers:
                    raise ValueError(f"{where}.g: must be 1..servers ({self.servers})")
                if rep.datafiles is not None and rep.datafiles > self.servers:
                    raise ValueError(f"{where}.datafiles: must be 1..servers ({self.servers})")
                if rep.slots is not None and rep.slots > self.servers:
                    raise ValueError(f"{where}.slots: must be 1..servers ({self.servers})")
                if rep.slots is not None and rep.datafiles is not None and rep.slots * rep.datafiles > self.servers:
                    raise ValueError(f"{where}.slots: slots x datafiles ({rep.slots} x {rep.datafiles}) exceeds "
                                     f"servers ({self.servers}): each slot pins its own datafiles servers")
        return self


def render_shim_config(config: ShimConfig) -> str:
    """The JSON the shim reads: unset optional fields are left out (the shim's defaults apply)."""
    doc: dict[str, Any] = config.model_dump(mode="json", exclude_none=True)
    return json.dumps(doc, indent=2) + "\n"


def parse_shim_config(text: str) -> ShimConfig:
    """Read a rendered (or hand-written) config back; pydantic's ValidationError names the field."""
    return ShimConfig.model_validate_json(text)


def slot_of(tail: str, slots: int) -> int:
    """Which of ``slots`` pinned directories a replica file lives in: the last decimal number in the file's
    name (its extension left out unless all digits) mod ``slots`` — rank-numbered files (IOR's
    ``data.00000003``, ``out_0042.h5``) spread over the slots as the ranks do — else the name's 32-bit
    FNV-1a hash mod ``slots``. A function of the name alone, so every process finds the same copy. The twin
    of the shim's ``pfs_slot_of`` (the same table of cases in both test suites)."""
    if slots <= 1:
        return 0
    name = tail.rsplit("/", 1)[-1]
    stem = name
    dot = name.rfind(".")
    if 0 <= dot < len(name) - 1 and not re.fullmatch(r"[0-9]+", name[dot + 1:]):
        stem = name[:dot]
    runs = re.findall(r"[0-9]+", stem)
    if runs:
        return int(runs[-1]) % slots
    h = 2166136261
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h % slots


def replica_path(directory: str, tail: str, slots: int | None) -> str:
    """A replica's copy of the file at ``tail`` below its rule (the shim's ``pfs_replica_path``)."""
    return f"{directory}/slot-{slot_of(tail, slots)}{tail}" if slots and slots > 1 else f"{directory}{tail}"
