"""``lab hybrid`` (issue 13): a mixed workload on every static layout and through the shim's replica
routing, on the lab's real OrangeFS servers.

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
files of a layout of fewer datafiles than servers spread over its slot directories (layout LIST,
``pinned_slots``) as the operator places them; ``default``: no hints, so OrangeFS
gives the file its file system's default distribution — ``simple_stripe`` with a 64 KiB strip over
every server (the lab's fs.conf sets no default datafile count); and ``hybrid``: a replica set of the
layouts the model picks for the read phases (each a static layout above, with the same hints and the
shim's ``slots``), every write going to all copies at once (``lazy_sync.alongside``) and each read routed
to the cheapest clean copy. All variants run with the shim preloaded (pass-through where no rule matches).

**The scores** (``score``, pure): per variant per phase the median and spread over the rounds; a
variant's total is the sum of its phase medians; the per-phase *oracle* is Σ over phases of the fastest
static variant's median (default included: it is a static layout too); *gain* = default / hybrid − 1;
*distance* to the oracle = hybrid / oracle − 1; the *sync cost* is the write phase's time with the
replicas against without them (the default's and the fastest static write), with the bytes written;
the *break-even* (``break_even``) is how many read passes per write each goal needs by the run's medians.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pfslab.net import LabError
from pfslab.report import section_head
from pfslab.runs import Clients, Tools
from pfslab.score import fastest, human_size, layout_order, spread
from pfslab.servers import MOUNT
from pfslayout.calibration.design import CellConfig
from pfslayout.calibration.grid import layout_key, useful_groups
from pfslayout.calibration.synthetic import model_time
from pfslayout.costmodel import CostParams
from pfslayout.planner.hints import SLOT_PREFIX, hints_for, pinned_slots, slot_count
from pfslayout.planner.models import Sharing
from pfslayout.shimconfig import Replica, Rule, ShimConfig, ShimParams, render_shim_config, replica_path

DEFAULT = "default"
HYBRID = "hybrid"
SHARING: Sharing = "file-per-process"
GOAL_GAIN = 0.20  # the goals: ≥ 20% faster than the default layout ...
GOAL_DISTANCE = 0.05  # ... and within 5% of the per-phase oracle


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


# ------------------------------------------------------------------------------------------------ scoring


def score(times: Mapping[str, Mapping[str, Sequence[float]]], phases: Sequence[Phase], *, procs: int, block: int,
          replicas: int, default: str = DEFAULT, hybrid: str = HYBRID) -> dict[str, Any]:
    """Scores of one run. ``times[variant][phase]`` are the rounds' times (seconds); every variant that is
    not ``hybrid`` is a static layout (``default`` among them). Raises on a missing variant or phase."""
    names = [p.name for p in phases]
    if hybrid not in times or default not in times:
        raise ValueError(f"times need the {default!r} and {hybrid!r} variants (have {sorted(times)})")
    for v, per in times.items():
        if missing := [n for n in names if not per.get(n)]:
            raise ValueError(f"{v}: no times for phase(s) {', '.join(missing)}")
    statics = sorted((v for v in times if v != hybrid), key=_variant_order)
    median = {v: {n: float(statistics.median(times[v][n])) for n in names} for v in times}
    total = {v: sum(median[v].values()) for v in times}
    reads = [p.name for p in phases if p.op == "read"]
    read_total = {v: sum(median[v][n] for n in reads) for v in times}

    def quickest(phase: str) -> str:
        return min(statics, key=lambda v: (median[v][phase], _variant_order(v)))

    oracle_layout = {n: quickest(n) for n in names}
    oracle_phase = {n: median[oracle_layout[n]][n] for n in names}
    oracle = sum(oracle_phase.values())
    oracle_reads = sum(oracle_phase[n] for n in reads)
    best_static = min(statics, key=lambda v: (total[v], _variant_order(v)))
    writes = [p.name for p in phases if p.op == "write"]
    write = writes[0]
    fastest_write = oracle_layout[write]
    hybrid_write, default_write = median[hybrid][write], median[default][write]
    written = procs * block
    return {
        "variants": [*statics, hybrid],
        "median": median,
        "spread": {v: {n: spread(times[v][n]) for n in names} for v in times},
        "times": {v: {n: list(times[v][n]) for n in names} for v in times},
        "total": total,
        "read_total": read_total,
        "oracle": {"total": oracle, "per_phase": oracle_phase, "layout": oracle_layout, "reads": oracle_reads},
        "best_static": {"layout": best_static, "total": total[best_static]},
        "gain": total[default] / total[hybrid] - 1,
        "gain_over_best_static": total[best_static] / total[hybrid] - 1,
        "distance_to_oracle": total[hybrid] / oracle - 1,
        "reads": {"gain": read_total[default] / read_total[hybrid] - 1,
                  "distance_to_oracle": read_total[hybrid] / oracle_reads - 1} if reads else None,
        "sync_cost": {
            "phase": write,
            "hybrid": hybrid_write,
            "default": default_write,
            "fastest_static": {"layout": fastest_write, "time": median[fastest_write][write]},
            "vs_default": hybrid_write / default_write - 1,
            "vs_fastest_static": hybrid_write / median[fastest_write][write] - 1,
            "bytes_written": {"hybrid": written * replicas, "static": written},
            "replicas": replicas,
        },
        "goals": {"gain_at_least": GOAL_GAIN, "distance_at_most": GOAL_DISTANCE,
                  "gain_met": total[default] / total[hybrid] - 1 >= GOAL_GAIN,
                  "distance_met": total[hybrid] / oracle - 1 <= GOAL_DISTANCE},
        "break_even": break_even(phases, median, oracle_phase, default=default, hybrid=hybrid),
    }


def passes_needed(write_a: float, per_pass_a: float, write_b: float, per_pass_b: float,
                  factor: float) -> int | None:
    """The fewest read passes N ≥ 1 with write_a + N·per_pass_a ≥ factor·(write_b + N·per_pass_b), or None
    when more passes never get there (each pass gains nothing on the factor)."""
    slope = per_pass_a - factor * per_pass_b
    need = factor * write_b - write_a
    if need <= 0:
        return 1
    if slope <= 0:
        return None
    return max(1, math.ceil(need / slope))


def break_even(phases: Sequence[Phase], median: Mapping[str, Mapping[str, float]], oracle_phase: Mapping[str, float],
               *, default: str = DEFAULT, hybrid: str = HYBRID) -> dict[str, Any]:
    """How many read passes per write this run's medians say the goals need — an extrapolation that
    assumes every further pass costs what this run's passes did on average: the hybrid pays its extra
    copy once, at the write, and gains (or loses) a little on every read pass."""
    writes = [p.name for p in phases if p.op == "write"]
    reads = [p for p in phases if p.op == "read"]
    if not writes or not reads:
        return {"passes": 0, "passes_for_gain": None, "passes_for_distance": None}
    first = reads[0]
    passes = sum(1 for p in reads if (p.pattern, p.transfer) == (first.pattern, first.transfer))

    def split(times: Mapping[str, float]) -> tuple[float, float]:
        return sum(times[n] for n in writes), sum(times[p.name] for p in reads) / passes

    (w_h, r_h), (w_d, r_d), (w_o, r_o) = split(median[hybrid]), split(median[default]), split(oracle_phase)
    return {
        "passes": passes,
        "per_pass": {"hybrid": r_h, "default": r_d, "oracle": r_o},
        "write": {"hybrid": w_h, "default": w_d, "oracle": w_o},
        # default ≥ (1 + gain)·hybrid, and (1 + distance)·oracle ≥ hybrid
        "passes_for_gain": passes_needed(w_d, r_d, w_h, r_h, 1 + GOAL_GAIN),
        "passes_for_distance": passes_needed((1 + GOAL_DISTANCE) * w_o, (1 + GOAL_DISTANCE) * r_o, w_h, r_h, 1.0),
    }


def _variant_order(v: str) -> tuple[int, int, int]:
    if v == DEFAULT:
        return (1, 0, 0)
    if v == HYBRID:
        return (2, 0, 0)
    return (0, *layout_order(v))


def routing(stats_docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The shim's per-replica counters summed over the ranks' ``pfsshim-stats/1`` documents of one phase:
    reads, writes and their bytes per replica (by index), deferred updates and drains, writes made to
    every copy at once (alongside)."""
    reps: dict[int, dict[str, Any]] = {}
    totals = {"deferred_updates": 0, "deferred_bytes": 0, "applied_by_drain": 0, "applied_by_thread": 0,
              "forced_drains": 0, "sync_errors": 0, "alongside_writes": 0, "alongside_bytes": 0}
    for doc in stats_docs:
        for f in doc.get("files", []):
            for i, r in enumerate(f.get("replicas", [])):
                into = reps.setdefault(i, {"layout": r.get("layout"), "reads": 0, "read_bytes": 0, "writes": 0,
                                           "write_bytes": 0})
                for k in ("reads", "read_bytes", "writes", "write_bytes"):
                    into[k] += int(r.get(k, 0))
            for k in totals:
                totals[k] += int(f.get(k, 0))
    return {"replicas": [reps[i] for i in sorted(reps)], **totals}


# ------------------------------------------------------------------------------------------------ the run


def variant_dir(root: str, variant: str) -> str:
    return f"{root}/{variant.replace(':', '-g')}"


def replica_dir(root: str, key: str) -> str:
    return f"{root}/.replica-{key.replace(':', '-g')}"


def slot_dir(directory: str, j: int) -> str:
    return f"{directory}/{SLOT_PREFIX}{j}"


def rank_file(plan: Plan, variant: str, root: str, rank: int) -> str:
    """Where rank ``rank``'s file of ``variant`` (or of ``replica <key>``) is: IOR's ``<dir>/data.<rank>``,
    in slot ``slot_of(name)`` of a pinned layout (IOR's ``-o a@b@...`` gives rank k the k mod count-th name;
    the shim's ``slots`` gives a replica the same slot by name)."""
    name = f"/data.{rank:08d}"
    if variant.startswith("replica "):
        key = variant.split(" ", 1)[1]
        return replica_path(replica_dir(root, key), name, plan.layout(key).slots)
    if variant in (DEFAULT, HYBRID):
        return variant_dir(root, variant) + name
    return replica_path(variant_dir(root, variant), name, plan.layout(variant).slots)


def shim_config(plan: Plan, params: CostParams, root: str, variant: str = "corrected") -> str:
    """One config for every variant: a hints rule per static layout's directory (its slot directories
    included: a rule covers what is below it), the replica set on the hybrid's (the operator's mapping:
    layout, g, strip as striping_unit, num_dfiles as striping_factor, slots when pinned), nothing on the
    default's."""
    rules = [Rule(path=f"pvfs2:{variant_dir(root, s.key)}", hints=s.romio_hints()) for s in plan.layouts]
    replicas = [Replica.model_validate({"dir": f"pvfs2:{replica_dir(root, k)}", "layout": plan.layout(k).layout,
                                        "g": plan.layout(k).g, "strip_size": plan.layout(k).strip_size,
                                        "datafiles": plan.layout(k).num_dfiles,
                                        "slots": plan.layout(k).slots if plan.layout(k).slots > 1 else None})
                for k in plan.replicas]
    rules.append(Rule(path=f"pvfs2:{variant_dir(root, HYBRID)}", replicas=replicas))
    config = ShimConfig.model_validate({
        "params": ShimParams(e=params.e, v=params.v, alpha_seq=params.alpha_seq, alpha_rand=params.alpha_rand,
                             beta=params.beta),
        "variant": variant, "servers": plan.servers, "rules": rules})
    # no stats block: each launch names its own directory with PFSLAYOUT_SHIM_STATS
    return render_shim_config(config)


@dataclass
class RunTools:
    """The lab's tools plus IOR and the shim library."""

    lab: Tools
    ior: Path
    shim: Path

    @staticmethod
    def from_env(lab: Tools) -> RunTools:
        import os
        ior_prefix = os.environ.get("PFSLAYOUT_IOR_PREFIX")
        if not ior_prefix:
            raise LabError("PFSLAYOUT_IOR_PREFIX not set: run `eval \"$(images/build/host.sh env)\"` (builds IOR)")
        ior = Path(ior_prefix) / "bin" / "ior"
        shim = Path(os.environ["PFSLAYOUT_SHIM_PREFIX"]) / "lib" / "libpfsshim.so"
        for what, path in (("PFSLAYOUT_IOR_PREFIX", ior), ("PFSLAYOUT_SHIM_PREFIX", shim)):
            if not path.exists():
                raise LabError(f"{what}: {path} does not exist; rebuild with `images/build/host.sh env`")
        return RunTools(lab, ior, shim)

    def ofs(self, name: str) -> str:
        return str(self.lab.orangefs / "bin" / name)


def ior_targets(plan: Plan, variant: str, root: str) -> str:
    """IOR's ``-o``: ``<dir>/data``, or for a pinned static layout one name per slot joined by ``@``."""
    directory = variant_dir(root, variant)
    slots = plan.layout(variant).slots if variant not in (DEFAULT, HYBRID) else 0
    if slots > 1:
        return "@".join(f"pvfs2:{slot_dir(directory, j)}/data" for j in range(slots))
    return f"pvfs2:{directory}/data"


def ior_argv(plan: Plan, phase: Phase, target: str, summary: Path) -> list[str]:
    argv = ["-a", "MPIIO", "-F", "-k", "-b", str(plan.block), "-t", str(phase.transfer), "-o", target,
            "-O", "summaryFormat=JSON", "-O", f"summaryFile={summary}"]
    argv.insert(0, "-w" if phase.op == "write" else "-r")
    if phase.pattern == "random":
        argv.append("-z")
    return argv


def run_phase(tools: RunTools, plan: Plan, phase: Phase, target: str, work: Path, tag: str, pvfs2tab: Path,
              clients: Clients, config: Path, timeout: float = 1800) -> tuple[float, list[dict[str, Any]]]:
    """One IOR launch: its totalTime (seconds) and the shim's stats documents of its ranks."""
    summary = work / f"{tag}.ior.json"
    stats = work / f"{tag}.stats"
    stats.mkdir(parents=True, exist_ok=True)
    mpiexec = clients.mpiexec_argv(str(tools.lab.mpich / "bin" / "mpiexec"))
    argv = [*mpiexec, "-n", str(plan.procs), "-genv", "LD_PRELOAD", str(tools.shim),
            "-genv", "PFSLAYOUT_SHIM_CONFIG", str(config), "-genv", "PFSLAYOUT_SHIM_STATS", str(stats),
            str(tools.ior), *ior_argv(plan, phase, target, summary)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=tools.lab.env(pvfs2tab),
                          check=False)
    (work / f"{tag}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not summary.exists():
        raise LabError(f"IOR {phase.name} on {target} failed (exit {done.returncode}): "
                       f"{(done.stderr or done.stdout).strip()[-1200:]}")
    results = json.loads(summary.read_text())["tests"][0]["Results"]
    flat = [r for it in results for r in (it if isinstance(it, list) else [it])]
    mine = [r for r in flat if r.get("access") == phase.op]
    if not mine:
        raise LabError(f"IOR {phase.name}: no {phase.op} result in {summary}")
    docs = [json.loads(p.read_text()) for p in sorted(stats.glob("*stats.rank-*.json"))]
    return float(mine[0]["totalTime"]), docs


def _ofs(tools: RunTools, pvfs2tab: Path, *argv: str, check: bool = True) -> str:
    done = subprocess.run([tools.ofs(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120,
                          env=tools.lab.env(pvfs2tab), check=False)
    if check and done.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def prepare(tools: RunTools, plan: Plan, root: str, pvfs2tab: Path) -> None:
    """The directories of every variant and replica (layouts come from the create hints), and the slot
    directories of the pinned ones with their xattrs (layout LIST over the slot's servers)."""
    _ofs(tools, pvfs2tab, "pvfs2-mkdir", root, check=False)
    dirs = [variant_dir(root, v) for v in plan.variants] + [replica_dir(root, k) for k in plan.replicas]
    pinned = [(variant_dir(root, s.key), s) for s in plan.layouts if s.slots > 1]
    pinned += [(replica_dir(root, k), plan.layout(k)) for k in plan.replicas if plan.layout(k).slots > 1]
    for d in dirs:
        _mkdir(tools, pvfs2tab, d)
    for d, layout in pinned:
        for j, xattrs in enumerate(layout.slot_xattrs(plan.addresses)):
            _mkdir(tools, pvfs2tab, slot_dir(d, j))
            for key, value in xattrs.items():
                _ofs(tools, pvfs2tab, "pvfs2-xattr", "-s", "-k", key, "-v", value, slot_dir(d, j))


def _mkdir(tools: RunTools, pvfs2tab: Path, d: str) -> None:
    _ofs(tools, pvfs2tab, "pvfs2-mkdir", d, check=False)
    _ofs(tools, pvfs2tab, "pvfs2-ls", d)  # exists now (mkdir of an existing directory only complains)


def realised(tools: RunTools, files: Sequence[str], pvfs2tab: Path) -> dict[str, Any]:
    """What OrangeFS made of the rank files (``pvfs2-viewdist``): datafiles, strip and the servers (last
    address byte) each file's datafiles are on — placement is part of what a layout is."""
    out: dict[str, Any] = {"datafiles": None, "strip": None, "servers": []}
    for path in files:
        text = _ofs(tools, pvfs2tab, "pvfs2-viewdist", "-f", path)
        servers = []
        for line in text.splitlines():
            if line.startswith("Number of datafiles/servers"):
                out["datafiles"] = int(line.split("=")[1])
            elif line.startswith("strip_size:"):
                out["strip"] = int(line.split(":")[1])
            elif line.startswith("Datafile ") and "tcp://" in line:
                servers.append(line.split("tcp://")[1].split(":")[0])
        out["servers"].append(servers)
    return out


@dataclass
class Measured:
    times: dict[str, dict[str, list[float]]]
    routing: dict[str, Any]  # phase → the hybrid's routing counters (last round)
    realised: dict[str, dict[str, Any]]  # variant / replica → datafiles, strip, servers (last round's files)
    # variant / replica → per round, the servers of each rank file's datafiles (OrangeFS places each file
    # anew when IOR recreates it, and a layout of fewer datafiles than servers may stack files on a server)
    placement: dict[str, list[list[list[str]]]] = field(default_factory=dict)


def run(tools: RunTools, plan: Plan, params: CostParams, rounds: int, work: Path, pvfs2tab: Path,
        clients: Clients, tag: str = "hybrid", variant: str = "corrected", log: Any = None) -> Measured:
    """``rounds`` rounds; in each, every variant runs all phases in order (so variants interleave in time
    and the machine's drift spreads over all of them). IOR's write phase deletes the variant's previous
    files (``MPI_File_delete``, which the shim applies to every replica); the last round's files stay."""
    root = f"{MOUNT}/{tag}"
    prepare(tools, plan, root, pvfs2tab)
    config = work / "shim.json"
    config.write_text(shim_config(plan, params, root, variant))
    times: dict[str, dict[str, list[float]]] = {v: {p.name: [] for p in plan.phases} for v in plan.variants}
    route: dict[str, Any] = {}
    kept = [v for v in plan.variants if v != HYBRID] + [f"replica {k}" for k in plan.replicas]
    made: dict[str, dict[str, Any]] = {}
    placement: dict[str, list[list[list[str]]]] = {k: [] for k in kept}
    for r in range(rounds):
        for v in plan.variants:
            target = ior_targets(plan, v, root)  # IOR's write phase deletes the previous round's files first
            for ph in plan.phases:
                t, stats = run_phase(tools, plan, ph, target, work, f"r{r}-{v.replace(':', '-g')}-{ph.name}", pvfs2tab,
                                     clients, config)
                times[v][ph.name].append(t)
                if v == HYBRID:
                    route[ph.name] = routing(stats)
                if log:
                    log(f"round {r + 1}/{rounds} {v} {ph.name}: {t:.3f} s")
            for key in [key for key in kept if key == v or (v == HYBRID and key.startswith("replica "))]:
                made[key] = realised(tools, [rank_file(plan, key, root, k) for k in range(plan.procs)], pvfs2tab)
                placement[key].append(made[key]["servers"])
    return Measured(times, route, made, placement)


# ------------------------------------------------------------------------------------------------ report


def build_report(plan: Plan, measured: Measured, setup: Mapping[str, Any]) -> dict[str, Any]:
    scores = score(measured.times, plan.phases, procs=plan.procs, block=plan.block, replicas=len(plan.replicas))
    return {
        "setup": dict(setup),
        "workload": {"sharing": SHARING, "procs": plan.procs, "block_per_rank": plan.block,
                     "common_request_size": plan.s_common,
                     "phases": [{**asdict(p), "requests_per_rank": plan.requests(p)} for p in plan.phases]},
        "layouts": {**{s.key: {**asdict(s), "romio_hints": s.romio_hints()} for s in plan.layouts},
                    DEFAULT: {"description": "no hints: the file system's default distribution (simple_stripe, "
                                             "64 KiB strip, a datafile on every server)"}},
        "pinned": bool(plan.addresses),
        "realised": measured.realised,
        "placement": measured.placement,
        "replicas": list(plan.replicas),
        "model_picks": plan.picks,
        "model_static_pick": plan.static_pick,
        "routing": measured.routing,
        **scores,
    }


def phase_kind(name: str) -> str:
    """A phase's name without its pass number (``small-random-read-3`` → ``small-random-read``)."""
    return re.sub(r"-[0-9]+$", "", name)


def results_markdown(doc: Mapping[str, Any], command: str) -> str:
    setup, work = doc["setup"], doc["workload"]
    phases = [p["name"] for p in work["phases"]]
    passes = sum(1 for p in work["phases"] if p["op"] == "read") // 2
    # one column per kind of phase, its passes summed: 33 columns would not read
    kinds: dict[str, list[str]] = {}
    for n in phases:
        kinds.setdefault(phase_kind(n) if passes > 1 else n, []).append(n)
    described = {phase_kind(p["name"]) if passes > 1 else p["name"]: p for p in work["phases"]}
    pinned = doc.get("pinned", False)
    pct = _pct
    times = f"{passes} times" if passes > 1 else "once"
    lines = [
        *section_head("Hybrid replicas on a mixed workload:" if passes == 1 else
                      f"Hybrid replicas on a mixed workload read back {passes} times:", command, setup),
        f"Workload: {work['procs']} ranks, a file per rank of {human_size(work['block_per_rank'])} written once, "
        f"then read back {times}, each pass small random then large sequential reads: " + ", ".join(
            f"{k} ({p['op']}, {p['pattern']}, {human_size(p['transfer'])} × {p['requests_per_rank']}"
            + (f", × {len(kinds[k])} passes" if len(kinds[k]) > 1 else "") + ")"
            for k, p in described.items()) + f". Layouts realised by `hints_for` for the most common request size "
        f"({human_size(work['common_request_size'])}); default = no hints (64 KiB strip over every server). "
        + ("Layouts of fewer datafiles than servers pinned: rank k's file in slot k mod (servers / datafiles), a "
           "directory with layout LIST over that slot's servers (`pinned_slots`; replicas through the shim's "
           "`slots`). " if pinned else "Not pinned: OrangeFS places each file of a layout of fewer datafiles "
                                          "than servers at random. ")
        + f"Replicas: {', '.join(doc['replicas'])} (the model's picks: "
        + ", ".join(f"{k} → {v}" for k, v in {phase_kind(a) if passes > 1 else a: b
                                               for a, b in doc["model_picks"].items()}.items()) + ").",
        "",
        ("Each cell: the phase's median over the rounds (± spread)" if passes == 1 else
         "Each cell: the sum over the passes of each phase's median over the rounds (± the largest spread "
         "among them)") + "; the oracle takes the fastest static layout of every phase.",
        "",
        "| variant | " + " | ".join(kinds) + " | total |",
        "|---|" + "---|" * (len(kinds) + 1),
    ]
    for v in doc["variants"]:
        cells = [f"{sum(doc['median'][v][n] for n in ns):.3f} s (±{max(doc['spread'][v][n] for n in ns):.0%})"
                 for ns in kinds.values()]
        name = f"**{v}**" if v == HYBRID else v
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {doc['total'][v]:.3f} s |")
    o = doc["oracle"]
    lines.append("| per-phase oracle | " + " | ".join(
        f"{sum(o['per_phase'][n] for n in ns):.3f} s ({'/'.join(dict.fromkeys(o['layout'][n] for n in ns))})"
        for ns in kinds.values()) + f" | {o['total']:.3f} s |")
    sc = doc["sync_cost"]
    reads = doc.get("reads") or {}
    goals = doc["goals"]
    lines += [
        "",
        f"* **Gain over the default layout: {pct(doc['gain'])}** (goal ≥ {goals['gain_at_least']:.0%}: "
        f"{'met' if goals['gain_met'] else 'not met'}); over the best static layout ({doc['best_static']['layout']}): "
        f"{pct(doc['gain_over_best_static'])}.",
        f"* **Distance to the per-phase oracle: {pct(doc['distance_to_oracle'])}** (goal ≤ "
        f"{goals['distance_at_most']:.0%}: {'met' if goals['distance_met'] else 'not met'}).",
        f"* Read phases alone: gain {pct(reads.get('gain'))}, distance to their oracle "
        f"{pct(reads.get('distance_to_oracle'))}.",
        f"* **Sync cost of the replicas** ({sc['replicas']} copies): the {sc['phase']} phase took "
        f"{sc['hybrid']:.3f} s with them against {sc['default']:.3f} s on the default layout "
        f"({pct(sc['vs_default'])}) and {sc['fastest_static']['time']:.3f} s on the fastest static layout "
        f"({sc['fastest_static']['layout']}, {pct(sc['vs_fastest_static'])}); "
        f"{human_size(sc['bytes_written']['hybrid'])} written instead of {human_size(sc['bytes_written']['static'])}.",
    ]
    partial = [k for k, v in doc.get("realised", {}).items()
               if v.get("datafiles") and v["datafiles"] < doc["setup"].get("servers", 0)]
    if partial:
        def where(files: list[list[str]]) -> str:
            return "/".join("+".join(a.rsplit(".", 1)[-1] for a in f) for f in files)

        how = "pinned by slot" if pinned else "the planner's hints do not pin them"
        lines += ["", "Where OrangeFS put the rank files of the layouts with fewer datafiles than servers, round by "
                  f"round (last address byte of each file's datafiles; {how}): "
                  + "; ".join(f"{k}: " + ", ".join(where(r) for r in doc.get("placement", {}).get(k)
                                                    or [doc["realised"][k]["servers"]])
                              for k in partial) + "."]
    be = doc.get("break_even") or {}
    if be.get("per_pass"):
        def needed(n: int | None) -> str:
            return "never (each pass loses ground)" if n is None else f"{n}"

        lines += ["", f"* **Break-even, extrapolated** from this run's medians (a write, then passes of "
                  f"{be['per_pass']['hybrid']:.3f} s on the hybrid against {be['per_pass']['oracle']:.3f} s for the "
                  f"oracle and {be['per_pass']['default']:.3f} s on the default): the gain goal needs "
                  f"{needed(be['passes_for_gain'])} read pass(es) per write, the distance goal "
                  f"{needed(be['passes_for_distance'])}; this run had {be['passes']}."]
    static = doc.get("model_static_pick")
    if static in doc["total"]:
        lines += ["", f"The model's single static layout for the whole workload would be {static}: "
                  f"{doc['total'][static]:.3f} s measured, a gain over the default of "
                  f"{pct(doc['total'][DEFAULT] / doc['total'][static] - 1)}."]
    if doc.get("routing"):
        lines += ["", "Routing (the shim's counters, last round, all ranks"
                  + (", summed over the passes" if passes > 1 else "") + "):", ""]
        for name, r in _routing_by_kind(doc["routing"], passes > 1).items():
            reps = "; ".join(f"{x['layout']}: {x['reads']} reads, {x['writes']} direct writes" for x in r["replicas"])
            along = (f", {r['alongside_writes']} written to every copy at once "
                     f"({human_size(r['alongside_bytes'])} to the others)") if r.get("alongside_writes") else ""
            lines.append(f"* {name}: {reps}; {r['deferred_updates']} updates replayed to other copies"
                         f" ({human_size(r['deferred_bytes'])}){along}")
    return "\n".join(lines) + "\n"


def _routing_by_kind(routing: Mapping[str, Any], by_kind: bool) -> dict[str, Any]:
    """The routing counters per phase, or summed per kind of phase over the passes."""
    if not by_kind:
        return dict(routing)
    out: dict[str, Any] = {}
    for name, r in routing.items():
        into = out.setdefault(phase_kind(name), {k: 0 for k in r if k != "replicas"} | {
            "replicas": [{**x, **dict.fromkeys(("reads", "read_bytes", "writes", "write_bytes"), 0)}
                         for x in r["replicas"]]})
        for k, v in r.items():
            if k != "replicas":
                into[k] += v
        for mine, theirs in zip(into["replicas"], r["replicas"]):
            for k in ("reads", "read_bytes", "writes", "write_bytes"):
                mine[k] += theirs[k]
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"
