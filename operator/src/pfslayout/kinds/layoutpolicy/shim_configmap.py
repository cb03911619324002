"""The shim config a LayoutPolicy's jobs run with (pure): ConfigMap `<policy>-shim`, `shim.json`.

* `trace` (when `spec.trace.enabled`): every rank's requests, written through MPI-IO into
  `pvfs2:<trace dir>` — the learning loop's input;
* `stats` (with the trace, into the same directory): each rank's per-file counts at `MPI_Finalize`,
  named `<job>.stats.rank-NNNNNN.json`;
* `route` (when `spec.shim.routePaths`): plain paths under the mount path are opened as `pvfs2:` paths,
  so a program that names `/mnt/orangefs/...` reaches OrangeFS without a kernel mount;
* `rules` for every rule whose decision is a replica set (`hybrid`): the rule's directory becomes the
  shim's replica set, each copy in `<path>/.replica-<name>` with the layout the hint Job gave that
  directory, and the router costs each request against the calibrated `params` on `servers` servers
  (a write with `e_write`/`beta_write` when the parameters have them, and `v_small_write` when set; every
  message with `e_shared` when set);
* `rules` with `spread` for every `static` decision whose files have fewer datafiles than the cluster has
  servers (1-DV and 2-D file per process) and no pinned server list: the hint Job gives the directory the
  datafile count and strip, but OrangeFS starts each file on a random server, so the shim asks ROMIO to
  create the k-th file on servers k·d … k·d + d − 1 (docs/shim-config.md, "spread") — the even spread the
  cost model assumes, with the user's paths unchanged.

Paths carry the `pvfs2:` prefix, so the shim reaches OrangeFS through ROMIO's pvfs2 driver whatever
path form the job uses (the shim matches rules on the bare path). The text is validated by the model
the C parser mirrors (shimconfig.py) before it is written, so a job never gets a config its shim refuses.
"""

from __future__ import annotations

from typing import Any

from pfslayout.costmodel.params import CostParams
from pfslayout.kinds.layoutpolicy import learn
from pfslayout.planner.hints import KEY_LAYOUT, KEY_NUM
from pfslayout.shimconfig import (
    Replica,
    Route,
    Rule,
    ShimConfig,
    ShimParams,
    Spread,
    StatsSettings,
    TraceSettings,
    render_shim_config,
)

PREFIX = "pvfs2:"


def _replica(target: str, r: dict[str, Any]) -> Replica:
    # status `servers` is the list of pinned ordinals: OrangeFS gives a LIST-pinned file one datafile per
    # listed server (it forces num_dfiles to the list's length), so that is the copy's datafile count
    pins = r.get("servers")
    return Replica(dir=f"{PREFIX}{target}/.replica-{r['name']}", layout=r["layout"], g=r.get("groups"),
                   strip_size=r.get("stripSize"), datafiles=len(pins) if pins else None, slots=r.get("slots"))


def replica_rules(rules: list[dict[str, Any]], mount_path: str) -> list[Rule]:
    """The shim's replica-set rules for the policy's applied `hybrid` decisions (status.rules[])."""
    out = []
    for r in rules:
        if r.get("decision") != "hybrid" or not r.get("replicas"):
            continue
        target = mount_path.rstrip("/") + (r["path"] if r["path"] != "/" else "")
        out.append(Rule(path=f"{PREFIX}{target}", replicas=[_replica(target, x) for x in r["replicas"]]))
    return out


def spread_rules(rules: list[dict[str, Any]], mount_path: str, servers: int) -> list[Rule]:
    """The shim's spread rules for the policy's `static` decisions with fewer datafiles than servers."""
    out = []
    for r in rules:
        hints = r.get("hints") or {}
        if r.get("decision") != "static" or KEY_LAYOUT in hints or not str(hints.get(KEY_NUM, "")).isdigit():
            continue  # a LIST-pinned directory already says where each file goes
        d = int(hints[KEY_NUM])
        if 1 <= d < servers:
            target = mount_path.rstrip("/") + (r["path"] if r["path"] != "/" else "")
            out.append(Rule(path=f"{PREFIX}{target}", spread=Spread(datafiles=d)))
    return out


def shim_config(spec: dict[str, Any], mount_path: str, namespace: str, params: CostParams, servers: int,
                rules: list[dict[str, Any]]) -> str:
    t = learn.trace_settings(spec)
    where = f"{PREFIX}{learn.trace_dir(spec, mount_path, namespace)}"
    trace = TraceSettings(enabled=True, dir=where, max_records=int(t.get("maxRecordsPerRank") or 1048576)) \
        if t.get("enabled") else None
    replica_sets = replica_rules(rules, mount_path)
    spreads = spread_rules(rules, mount_path, servers)
    config = ShimConfig(
        trace=trace, stats=StatsSettings(dir=where) if trace else None, rules=(replica_sets + spreads) or None,
        params=ShimParams.of(params) if replica_sets else None,
        servers=servers if replica_sets or spreads else None,
        route=Route(path=mount_path.rstrip("/") or "/", prefix=PREFIX)
        if ((spec.get("shim") or {}).get("routePaths")) else None)
    return render_shim_config(config)
