"""pfsprobe launches against the lab's servers.

With one client node (the root namespace, or one client namespace): one ``mpiexec`` per process count
p, with exactly p ranks. A single launch with as many ranks as the largest p used to leave the ranks
outside a cell busy-polling in MPI, which on a small machine slowed message-heavy cells 2–3× (measured in
the lab: 38 → 114 ms for p = 1); pfsprobe's waiting ranks now sleep, but they still cost start-up and a
little CPU, and the lab measures nothing it can avoid.

With several client namespaces, each is a client node: one launch of the whole world (ranks per node in
every namespace), because pfsprobe's placements (packed, spread) choose ranks across nodes. MPICH's
hydra starts one proxy per namespace through ``lab/netns-launch`` (its "ssh"), every process talks
over its namespace's ``eth0`` on the lab's bridge, and pfsprobe sees one node per namespace (hydra's
hosts are the namespaces' names).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfslab.net import LabError, in_ns

NETNS_LAUNCH = Path(__file__).resolve().parents[1] / "netns-launch"


@dataclass(frozen=True)
class Clients:
    """Where the probe's ranks run: the root namespace (no namespaces), or one node per namespace."""

    namespaces: tuple[str, ...] = ()
    ranks_per_node: int = 1

    @property
    def nodes(self) -> int:
        return max(len(self.namespaces), 1)

    def mpiexec_argv(self, mpiexec: str) -> list[str]:
        """``mpiexec`` with what places the ranks: in the client namespace, or one node per namespace."""
        if not self.namespaces:
            return [mpiexec]
        argv = in_ns(self.namespaces[0], mpiexec)
        if len(self.namespaces) > 1:
            hosts = ",".join(f"{ns}:{self.ranks_per_node}" for ns in self.namespaces)
            argv += ["-launcher", "ssh", "-launcher-exec", str(NETNS_LAUNCH), "-hosts", hosts, "-iface", "eth0"]
        return argv


@dataclass(frozen=True)
class Tools:
    """The OrangeFS and MPICH trees and the pfsprobe binary (``images/build/host.sh env`` names them)."""

    orangefs: Path
    mpich: Path
    pfsprobe: Path

    @staticmethod
    def from_env() -> Tools:
        names = ("ORANGEFS_PREFIX", "PFSLAYOUT_MPICH_PREFIX", "PFSLAYOUT_SHIM_PREFIX")
        if missing := [v for v in names if not os.environ.get(v)]:
            raise LabError(f"{', '.join(missing)} not set: run `eval \"$(images/build/host.sh env)\"` (builds "
                           "OrangeFS, MPICH and pfsprobe once) or point them at installed trees")
        tools = Tools(Path(os.environ["ORANGEFS_PREFIX"]), Path(os.environ["PFSLAYOUT_MPICH_PREFIX"]),
                      Path(os.environ["PFSLAYOUT_SHIM_PREFIX"]) / "bin" / "pfsprobe")
        for what, path in (("ORANGEFS_PREFIX", tools.orangefs / "sbin" / "pvfs2-server"),
                           ("PFSLAYOUT_MPICH_PREFIX", tools.mpich / "bin" / "mpiexec"),
                           ("PFSLAYOUT_SHIM_PREFIX", tools.pfsprobe)):
            if not path.exists():
                raise LabError(f"{what}: {path} does not exist; rebuild with `images/build/host.sh env`")
        return tools

    def env(self, pvfs2tab: Path) -> dict[str, str]:
        env = dict(os.environ)
        libs = [str(self.orangefs / "lib"), str(self.mpich / "lib"), env.get("LD_LIBRARY_PATH", "")]
        env["LD_LIBRARY_PATH"] = ":".join(p for p in libs if p)
        env["PVFS2TAB_FILE"] = str(pvfs2tab)
        return env


def launch(tools: Tools, nprocs: int, grid_file: Path, out: Path, pvfs2tab: Path, clients: Clients,
           timeout: float = 3600) -> None:
    argv = [*clients.mpiexec_argv(str(tools.mpich / "bin" / "mpiexec")), "-n", str(nprocs), str(tools.pfsprobe),
            "--grid", str(grid_file), "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=tools.env(pvfs2tab), check=False)
    if done.returncode != 0:
        raise LabError(f"pfsprobe with {nprocs} ranks failed (exit {done.returncode}): "
                       f"{(done.stderr or done.stdout).strip()[-1200:]}")


def run_grid(tools: Tools, grid: dict[str, Any], work: Path, tag: str, pvfs2tab: Path,
             clients: Clients) -> list[Path]:
    """Run a pfsprobe grid file — one launch per process count on one node, one launch of the whole
    world on several — and return the pfsprobe/1 documents, one per process count."""
    if clients.nodes > 1:
        grid_file = work / f"{tag}.grid.json"
        grid_file.write_text(json.dumps(grid, indent=1))
        whole = work / f"{tag}.json"
        launch(tools, clients.nodes * clients.ranks_per_node, grid_file, whole, pvfs2tab, clients)
        return split_by_p(json.loads(whole.read_text()), grid["procs"], work, tag)
    outs = []
    for p in grid["procs"]:
        one = copy.deepcopy(grid)
        one["procs"] = [p]
        grid_file = work / f"{tag}-p{p}.grid.json"
        grid_file.write_text(json.dumps(one, indent=1))
        out = work / f"{tag}-p{p}.json"
        launch(tools, p, grid_file, out, pvfs2tab, clients)
        outs.append(out)
    return outs


def split_by_p(doc: dict[str, Any], procs: list[int], work: Path, tag: str) -> list[Path]:
    """One pfsprobe/1 document per process count, as the one-node launches write them."""
    outs = []
    for p in procs:
        one = copy.deepcopy(doc)
        one["cells"] = [c for c in doc["cells"] if c["p"] == p]
        out = work / f"{tag}-p{p}.json"
        out.write_text(json.dumps(one, indent=1))
        outs.append(out)
    return outs


def run_rounds(tools: Tools, grids: Sequence[dict[str, Any]], rounds: int, work: Path, tag: str, pvfs2tab: Path,
               clients: Clients) -> list[Path]:
    """The grids ``rounds`` times, one repetition per cell per round (each round runs every grid), merged
    into one pfsprobe/1 document per process count whose cells carry every round's time (median and
    spread over the rounds)."""
    by_p: dict[int, list[Path]] = {}
    for r in range(rounds):
        for i, grid in enumerate(grids):
            outs = run_grid(tools, grid, work, f"{tag}-r{r}-g{i}", pvfs2tab, clients)
            for p, out in zip(grid["procs"], outs, strict=True):
                by_p.setdefault(p, []).append(out)
    merged = []
    for p, outs in sorted(by_p.items()):
        out = work / f"{tag}-p{p}.json"
        out.write_text(json.dumps(merge_rounds([json.loads(o.read_text()) for o in outs]), indent=1))
        merged.append(out)
    return merged


_KEY = ("layout", "g", "target", "op", "pattern", "sharing", "p", "m", "request_size", "requests_per_rank")


def merge_rounds(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """pfsprobe/1 documents of the same grid, one repetition each, as one document with every repetition."""
    import numpy as np

    first = copy.deepcopy(docs[0])
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for doc in docs:
        for c in doc["cells"]:
            key = tuple(c[k] for k in _KEY)
            into = cells.setdefault(key, {**{k: c[k] for k in _KEY}, "times": []})
            into["times"].extend(c["times"])
    out = []
    for c in cells.values():
        t = np.asarray(c["times"], dtype=float)
        q1, med, q3 = np.percentile(t, [25, 50, 75])
        out.append({**c, "repetitions": int(t.size), "median": float(med), "min": float(t.min()),
                    "max": float(t.max()), "iqr": float(q3 - q1)})
    first["cells"] = out
    return first
