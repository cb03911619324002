"""Measuring a ``lab hybrid`` plan on the lab's OrangeFS: the directories of every variant and replica,
then rounds of IOR launches (one ``mpiexec`` per phase, the shim preloaded), and what OrangeFS made of
the rank files (datafiles, strip, servers).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfslab.hybrid.paths import ior_target, rank_file, replica_dir, slot_dir, variant_dir
from pfslab.hybrid.plan import HYBRID, Phase, Plan
from pfslab.hybrid.shim import routing, shim_config
from pfslab.net import LabError
from pfslab.runs import Clients, Tools
from pfslab.servers import MOUNT
from pfslayout.costmodel import CostParams


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
    directories of the pinned replicas with their xattrs (layout LIST over the slot's servers); a pinned
    static variant needs none (the shim's spread places its files)."""
    _ofs(tools, pvfs2tab, "pvfs2-mkdir", root, check=False)
    dirs = [variant_dir(root, v) for v in plan.variants] + [replica_dir(root, k) for k in plan.replicas]
    pinned = [(replica_dir(root, k), plan.layout(k)) for k in plan.replicas if plan.layout(k).slots > 1]
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
    """What ``run`` measured: every variant's times per phase and round, the hybrid's routing counters
    and what OrangeFS made of the rank files."""

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
            target = ior_target(v, root)  # IOR's write phase deletes the previous round's files first
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
