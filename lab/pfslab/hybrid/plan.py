"""The ``lab hybrid`` workload and its plan: the phases, every static layout as the planner realises it,
and the replicas — the model's picks for the read phases.

**The workload** (``default_phases``): p ranks, each with a file of its own (file per process, IOR
``-F``), written once in large sequential blocks and then read back in one or more passes, each two
phases — small random reads (a random permutation of the file's 16 KiB blocks, IOR ``-z``), then large
sequential reads (4 MiB). A checkpoint or a per-rank output file that an analysis samples and then
streams, once or many times, is this shape. Each phase is one ``mpiexec`` of IOR through ROMIO's
``pvfs2:`` driver; a phase's time is IOR's ``totalTime`` (open, I/O and close, slowest rank), so the
hybrid's extra opens and the writes of its other copies are inside it.

**The variants.** Every static layout of the server count (1-DH, 1-DV, 2-D for each divisor g),
realised as the planner realises it — ``pfslayout.planner.hints.hints_for`` with the workload's most
common request size (by count, ties: the larger), passed as ROMIO's ``striping_factor`` (= num_dfiles)
and ``striping_unit`` (= strip) at create through a shim hints rule, and — pinned, the default — the
files of a layout of fewer datafiles than servers spread over the servers as the operator's jobs spread
them: a shim ``spread`` rule (rank k's file on servers k·d … k·d + d − 1, through ROMIO's
``romio_pvfs2_server_list``), in the variant's own directory, paths unchanged; ``default``: no hints, so OrangeFS
gives the file its file system's default distribution — ``simple_stripe`` with a 64 KiB strip over
every server (the lab's fs.conf sets no default datafile count); and ``hybrid``: a replica set of the
layouts the model picks for the read phases (each a static layout above, with the same hints and — a
replica set places its copies itself — the shim's ``slots``: slot directories pinned with layout LIST),
every write going to all copies at once (``lazy_sync.alongside``) and each read routed
to the cheapest clean copy. All variants run with the shim preloaded (pass-through where no rule matches).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pfslab.score import fastest, human_size
from pfslayout.calibration.design import CellConfig
from pfslayout.calibration.grid import layout_key, useful_groups
from pfslayout.calibration.synthetic import model_time
from pfslayout.costmodel import CostParams
from pfslayout.planner.hints import hints_for, pinned_slots, slot_count
from pfslayout.planner.models import Sharing

DEFAULT = "default"
HYBRID = "hybrid"
SHARING: Sharing = "file-per-process"


@dataclass(frozen=True)
class Phase:
    """One step of the workload: every rank moves its whole block with requests of ``transfer`` bytes."""

    name: str
    op: str  # write | read
    pattern: str  # sequential | random
    transfer: int

    def __post_init__(self) -> None:
        if self.op not in ("write", "read") or self.pattern not in ("sequential", "random"):
            raise ValueError(f"phase {self.name}: op must be write/read and pattern sequential/random")
        if self.transfer < 1:
            raise ValueError(f"phase {self.name}: transfer must be positive")


def default_phases(small: int = 16 << 10, large: int = 4 << 20, passes: int = 1) -> tuple[Phase, ...]:
    """Written once in large sequential blocks, then read ``passes`` times: small random, then large
    sequential (one pass: phase names without a number; more: ``-1``, ``-2``, ... per pass)."""
    if passes < 1:
        raise ValueError(f"read passes {passes}: at least 1")
    reads: list[Phase] = []
    for k in range(1, passes + 1):
        suffix = f"-{k}" if passes > 1 else ""
        reads += [Phase(f"small-random-read{suffix}", "read", "random", small),
                  Phase(f"large-sequential-read{suffix}", "read", "sequential", large)]
    return (Phase("write", "write", "sequential", large), *reads)


def phase_kind(name: str) -> str:
    """A phase's name without its pass number (``small-random-read-3`` → ``small-random-read``)."""
    return re.sub(r"-[0-9]+$", "", name)


@dataclass(frozen=True)
class StaticLayout:
    """A static layout as the planner realises it (``hints_for``): what ROMIO is given at create, the
    directory xattrs, and — pinned — how many slot directories (``pinned_slots``) its files spread over."""

    key: str  # layout_key: 1-DH, 1-DV, 2-D:g
    layout: str
    g: int | None
    num_dfiles: int
    strip_size: int | None
    xattrs: dict[str, str] = field(default_factory=dict)
    slots: int = 0  # > 1: rank k's file in <dir>/slot-<k mod slots>, pinned to that slot's servers

    def romio_hints(self) -> dict[str, str | int]:
        out: dict[str, str | int] = {"striping_factor": self.num_dfiles}
        if self.strip_size is not None:
            out["striping_unit"] = self.strip_size
        return out

    def describe(self) -> str:
        strip = f", strip {human_size(self.strip_size)}" if self.strip_size else ""
        pinned = f", pinned over {self.slots} slots" if self.slots > 1 else ""
        return f"{self.num_dfiles} datafile(s){strip}{pinned}"

    def slot_xattrs(self, addresses: Sequence[str]) -> list[dict[str, str]]:
        """Each slot directory's xattrs (empty when not pinned)."""
        if self.slots < 2:
            return []
        return pinned_slots(self.xattrs, addresses)


@dataclass(frozen=True)
class Plan:
    """Everything a run needs besides the lab: servers, ranks, bytes per rank, phases, layouts, replicas."""

    servers: int
    procs: int
    block: int
    phases: tuple[Phase, ...]
    s_common: int
    layouts: tuple[StaticLayout, ...]
    replicas: tuple[str, ...]  # layout keys, in replica order
    picks: dict[str, str] = field(default_factory=dict)  # read phase → the model's layout for it
    static_pick: str | None = None  # the model's one layout for the whole workload
    addresses: tuple[str, ...] = ()  # the servers' BMI addresses in fs.conf order (what pinning lists)

    def __post_init__(self) -> None:
        if self.procs < 1 or self.servers < 1:
            raise ValueError("procs and servers must be positive")
        for ph in self.phases:
            if self.block % ph.transfer:
                raise ValueError(f"phase {ph.name}: the block ({self.block} B) must be a multiple of its "
                                 f"transfer ({ph.transfer} B)")
        if [p.op for p in self.phases][:1] != ["write"]:
            raise ValueError("the first phase must write the files the others read")
        known = {s.key for s in self.layouts}
        if not self.replicas or any(r not in known for r in self.replicas) or len(set(self.replicas)) != len(
                self.replicas):
            raise ValueError(f"replicas {list(self.replicas)}: distinct layouts among {sorted(known)}")

    @property
    def variants(self) -> list[str]:
        """Measurement order within a round: the static layouts, the default, the hybrid."""
        return [s.key for s in self.layouts] + [DEFAULT, HYBRID]

    def layout(self, key: str) -> StaticLayout:
        return next(s for s in self.layouts if s.key == key)

    def requests(self, phase: Phase) -> int:
        return self.block // phase.transfer


def common_size(phases: Sequence[Phase], block: int) -> int:
    """The workload's most common request size by count (ties: the larger), as the planner's
    ``dominant_size``: the size ``hints_for`` realises every layout for."""
    counts: dict[int, int] = {}
    for ph in phases:
        counts[ph.transfer] = counts.get(ph.transfer, 0) + block // ph.transfer
    return max(counts, key=lambda s: (counts[s], s))


def static_layouts(servers: int, s_common: int, pin: bool = False) -> tuple[StaticLayout, ...]:
    out = []
    for layout, g in [("1-DH", None), ("1-DV", None)] + [("2-D", g) for g in useful_groups(servers)]:
        h = hints_for(layout, g, servers, SHARING, s_common)
        out.append(StaticLayout(layout_key(layout, g), layout, g, h.num_dfiles, h.strip_size, dict(h.xattrs),
                                slot_count(h.num_dfiles, servers) if pin else 0))
    return tuple(out)


def model_static(phases: Sequence[Phase], layouts: Sequence[StaticLayout], servers: int, procs: int, block: int,
                 params: CostParams, variant: str = "corrected") -> str:
    """The layout the model would choose for the whole workload if it had to be one: the smallest sum of
    the phases' modelled times (ties → ``layout_order``)."""
    return fastest({s.key: sum(model_time(CellConfig(s.layout, s.g, ph.op, ph.pattern, procs, procs, ph.transfer,
                                                     block // ph.transfer), servers, params, variant)
                               for ph in phases) for s in layouts})


def model_picks(phases: Sequence[Phase], layouts: Sequence[StaticLayout], servers: int, procs: int, block: int,
                params: CostParams, variant: str = "corrected") -> dict[str, str]:
    """The model's layout for each read phase (ties → ``layout_order``)."""
    out = {}
    for ph in phases:
        if ph.op != "read":
            continue
        times = {s.key: model_time(CellConfig(s.layout, s.g, ph.op, ph.pattern, procs, procs, ph.transfer,
                                              block // ph.transfer), servers, params, variant) for s in layouts}
        out[ph.name] = fastest(times)
    return out


def make_plan(servers: int, procs: int, block: int, phases: Sequence[Phase], params: CostParams,
              replicas: Sequence[str] | None = None, variant: str = "corrected",
              addresses: Sequence[str] = ()) -> Plan:
    """The plan: static layouts from ``hints_for``, replicas = the model's distinct picks for the read
    phases in phase order (or ``replicas`` as given). With ``addresses`` (one per server) the layouts of
    fewer datafiles than servers are pinned: their files spread over slot directories, as the operator
    pins them (``planner.hints.pinned_slots``); without, OrangeFS places each file at random."""
    if addresses and len(addresses) != servers:
        raise ValueError(f"addresses: {len(addresses)} given for {servers} servers")
    s_common = common_size(phases, block)
    layouts = static_layouts(servers, s_common, pin=bool(addresses))
    picks = model_picks(phases, layouts, servers, procs, block, params, variant)
    chosen = list(replicas) if replicas else list(dict.fromkeys(picks.values()))
    static = model_static(phases, layouts, servers, procs, block, params, variant)
    return Plan(servers, procs, block, tuple(phases), s_common, layouts, tuple(chosen), picks, static,
                tuple(addresses))
