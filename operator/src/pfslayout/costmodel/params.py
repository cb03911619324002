"""Cost-model parameters: the five platform constants of seeds 000/003 and the parameters file.

Units are SI throughout: seconds and bytes. The seeds print v and beta as 1/(120 MB) and 1/(1000 MB); we
read MB as MiB (docs/seeds.md §6 A7) because their request sizes are powers of two, so the seeds' constants
below are seconds per byte with MB = 2**20 bytes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pfslayout.errors import InputError

MIB = 1 << 20

_PARAM_NAMES = ("e", "v", "alpha_seq", "alpha_rand", "beta")
# Per-operation terms (issue 13, docs/cost-model.md "Reads and writes"): when set, e and beta are the read
# values and these the write values; unset, e and beta serve both operations (the five-parameter form).
WRITE_PARAM_NAMES = ("e_write", "beta_write")
# Shared cores (docs/cost-model.md "Shared cores"): when set, every message of a round — p processes, each
# request touching nt servers — also costs e_shared, because clients and servers run on the same cores.
SHARED_PARAM_NAMES = ("e_shared",)
# Small writes (docs/cost-model.md "Small writes"): when set, a write split over two servers or more into pieces
# below OrangeFS's small-I/O limit also costs v_small_write per byte of all ranks' data, on the network side.
# A write term: a read's parameters (for_op("read")) do not carry it.
SMALL_WRITE_NAMES = ("v_small_write",)
# Overlap (docs/cost-model.md "Overlapped network and storage"): when true, a request's network side
# (T_e + T_x) and storage side (T_s + T_rw) proceed together, so it takes the larger, not the sum.
OVERLAP_NAME = "overlap"
OPS = ("read", "write")


def _check_finite(value: float | None, info: Any) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class ServerParams(BaseModel):
    """Per-server overrides for heterogeneous servers; unset fields inherit the global value."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str | None = Field(default=None, description="server alias (e.g. OrangeFS host) for hints")
    e: float | None = Field(default=None, ge=0)
    v: float | None = Field(default=None, ge=0)
    alpha_seq: float | None = Field(default=None, ge=0)
    alpha_rand: float | None = Field(default=None, ge=0)
    beta: float | None = Field(default=None, gt=0)

    _finite = field_validator("e", "v", "alpha_seq", "alpha_rand", "beta")(_check_finite)


class ShuffleParams(BaseModel):
    """004 Eq. (1)'s platform constants: saturated intra-node and inter-node throughput (bytes/s) and a
    latency (s). 004 reports no values (docs/seeds.md §2.8); unset ones default from the five parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    B_a: float | None = Field(default=None, gt=0, description="intra-node throughput, bytes/s")
    B_e: float | None = Field(default=None, gt=0, description="inter-node throughput, bytes/s")
    gamma: float | None = Field(default=None, ge=0, description="message latency, s")


class CostParams(BaseModel):
    """e (s), v (s/byte), alpha_seq (s), alpha_rand (s), beta (s/byte); optional per-server overrides.

    Unknown keys are ignored (a calibration result may carry fit statistics beside the parameters); a
    misspelt parameter is still caught because all five are required.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    e: float = Field(ge=0, description="time to establish one network connection, s")
    v: float = Field(ge=0, description="network transfer time per byte, s/byte")
    alpha_seq: float = Field(ge=0, description="disk startup time of a sequential access, s")
    alpha_rand: float = Field(ge=0, description="disk startup time of a random access, s")
    beta: float = Field(ge=0, description="disk read/write time per byte, s/byte")
    servers: list[ServerParams] | None = Field(
        default=None, description="per-server overrides, one entry per server in server order"
    )
    shuffle: ShuffleParams | None = Field(default=None, description="004 shuffle constants (collective I/O)")
    e_write: float | None = Field(default=None, ge=0, description="e of a write when writes cost differently, s")
    beta_write: float | None = Field(default=None, ge=0,
                                     description="beta of a write when writes cost differently, s/byte")
    e_shared: float | None = Field(default=None, ge=0, description="per message of all processes' round when "
                                   "clients and servers share cores, s")
    v_small_write: float | None = Field(default=None, ge=0,
                                        description="per byte of all ranks' data of a write split over two servers or "
                                        "more into pieces below the small-I/O limit, s/byte")
    overlap: bool | None = Field(default=None, strict=True,
                                 description="a request's network terms (T_e + T_x) and storage terms (T_s + T_rw) "
                                 "overlap: it takes the larger, not the sum")

    _finite = field_validator("e", "v", "alpha_seq", "alpha_rand", "beta", "e_write", "beta_write",
                              "e_shared", "v_small_write")(_check_finite)

    @property
    def per_op(self) -> bool:
        """True when writes have their own e or beta (else one value serves both operations)."""
        return self.e_write is not None or self.beta_write is not None

    def for_op(self, op: str) -> CostParams:
        """The five-parameter form one operation is costed with: ``read`` keeps e and beta and drops
        v_small_write, ``write`` takes e_write and beta_write where set and keeps v_small_write. Per-server
        overrides and shuffle constants are kept."""
        if op not in OPS:
            raise InputError("op", f"unknown operation {op!r}", "use read or write")
        if not self.per_op and (self.v_small_write is None or op == "write"):
            return self
        update: dict[str, Any] = {"e_write": None, "beta_write": None}
        if op == "read":
            update["v_small_write"] = None
        if op == "write":
            update |= {"e": self.e if self.e_write is None else self.e_write,
                       "beta": self.beta if self.beta_write is None else self.beta_write}
        return self.model_copy(update=update)

    def mixed(self, read_fraction: float) -> CostParams:
        """The five-parameter form of a workload whose requests are ``read_fraction`` reads: e and beta
        averaged by operation, v_small_write (a write term) scaled by the write fraction. Exact for the trace
        total when reads and writes share their (p, m, size) mix, since every term is linear in e, beta and
        v_small_write (with ``overlap``, when one side dominates both operations' requests)."""
        if not self.per_op and self.v_small_write is None:
            return self
        rf = min(max(float(read_fraction), 0.0), 1.0)
        w = self.for_op("write")
        update: dict[str, Any] = {"e": rf * self.e + (1 - rf) * w.e, "beta": rf * self.beta + (1 - rf) * w.beta,
                                  "e_write": None, "beta_write": None}
        if self.v_small_write is not None:
            update["v_small_write"] = (1 - rf) * self.v_small_write
        return self.model_copy(update=update)

    def for_server(self, index: int) -> CostParams:
        """The effective parameters of server ``index`` (global values with its overrides applied)."""
        base: dict[str, Any] = {k: getattr(self, k) for k in
                                _PARAM_NAMES + WRITE_PARAM_NAMES + SHARED_PARAM_NAMES + SMALL_WRITE_NAMES
                                + (OVERLAP_NAME,)}
        if self.servers is not None and 0 <= index < len(self.servers):
            override = self.servers[index]
            given = {k: getattr(override, k) for k in _PARAM_NAMES if getattr(override, k) is not None}
            base.update(given)
            # a server's own e or β (fitted from both operations) replaces the global read and write values
            base.update({f"{k}_write": None for k in ("e", "beta") if k in given})
        return CostParams(**base)

    @property
    def heterogeneous(self) -> bool:
        if not self.servers:
            return False
        effective = {tuple(getattr(self.for_server(i), k) for k in _PARAM_NAMES) for i in range(len(self.servers))}
        return len(effective) > 1

    def shuffle_values(self) -> tuple[float, float, float]:
        """(B_a, B_e, γ): given values, else B_e = 1/v (the client–server link), B_a = B_e (no intra-node
        advantage assumed) and γ = e (one connection set-up)."""
        given = self.shuffle or ShuffleParams()
        b_e = given.B_e if given.B_e is not None else (1.0 / self.v if self.v > 0 else float("inf"))
        b_a = given.B_a if given.B_a is not None else b_e
        return b_a, b_e, given.gamma if given.gamma is not None else self.e

    def scalars(self) -> dict[str, float]:
        """The five parameters, plus e_write/beta_write, e_shared and v_small_write when set."""
        out = {k: float(getattr(self, k)) for k in _PARAM_NAMES}
        out |= {k: float(v) for k in WRITE_PARAM_NAMES + SHARED_PARAM_NAMES + SMALL_WRITE_NAMES
                if (v := getattr(self, k)) is not None}
        return out


# 003 Table 3 (= 000 Table 4). alpha and beta are the same on both networks.
SEED_ETHERNET = CostParams(e=0.0003, v=1.0 / (120 * MIB), alpha_seq=0.0001, alpha_rand=0.0003, beta=1.0 / (120 * MIB))
SEED_INFINIBAND = CostParams(e=0.0002, v=1.0 / (1000 * MIB), alpha_seq=0.0001, alpha_rand=0.0003,
                             beta=1.0 / (120 * MIB))

SEEDS: dict[str, CostParams] = {"ethernet": SEED_ETHERNET, "infiniband": SEED_INFINIBAND}


def _field_name(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "params"


def params_from_mapping(data: Any, source: str = "params") -> CostParams:
    """Validate a mapping into CostParams; the first problem becomes an InputError naming the field."""
    if not isinstance(data, dict):
        raise InputError(source, f"must be a mapping with keys {', '.join(_PARAM_NAMES)} (got {type(data).__name__})",
                         "write a JSON/YAML object")
    try:
        return CostParams.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = _field_name(first["loc"])
        problem = first["msg"].lower()
        if first["type"] == "missing":
            problem = "is required"
        return_fix = "give e, alpha_* in seconds and v, beta in seconds per byte"
        raise InputError(f"{source}: {field}", problem, return_fix) from None


def load_params(path: str | Path) -> CostParams:
    """Read a cost parameters file (JSON or YAML, chosen by content: JSON is valid YAML)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("--params", f"file {path} does not exist", "pass a JSON or YAML parameters file") from None
    except OSError as err:
        raise InputError("--params", f"cannot read {path}: {err.strerror}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        mark = getattr(getattr(err, "problem_mark", None), "line", None)
        line = getattr(err, "lineno", None) or (mark + 1 if mark is not None else None)
        where = f" (line {line})" if line is not None else ""
        raise InputError("--params", f"{path} is not valid JSON/YAML{where}", "fix the syntax") from None
    return params_from_mapping(data, source=str(path))


def resolve_params(spec: str | Path | CostParams | None) -> CostParams:
    """CLI helper: None → Ethernet seed; 'ethernet'/'infiniband' → that seed; anything else a file."""
    if spec is None:
        return SEED_ETHERNET
    if isinstance(spec, CostParams):
        return spec
    if str(spec).lower() in SEEDS:
        return SEEDS[str(spec).lower()]
    return load_params(spec)
