"""The shim's side of a ``lab hybrid`` run: the one config every variant runs under (a hints rule per
static layout, the replica set on the hybrid's directory) and its routing counters read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pfslab.hybrid.paths import replica_dir, variant_dir
from pfslab.hybrid.plan import HYBRID, Plan
from pfslayout.costmodel import CostParams
from pfslayout.shimconfig import Replica, Rule, ShimConfig, ShimParams, Spread, render_shim_config


def shim_config(plan: Plan, params: CostParams, root: str, variant: str = "corrected") -> str:
    """One config for every variant: a hints rule per static layout's directory, with — pinned — the
    ``spread`` the operator gives a static rule of fewer datafiles than servers (rank k's file on servers
    k·d …), the replica set on the hybrid's (the operator's mapping: layout, g, strip as striping_unit,
    num_dfiles as striping_factor, slots when pinned), nothing on the default's."""
    rules = [Rule(path=f"pvfs2:{variant_dir(root, s.key)}", hints=s.romio_hints(),
                  spread=Spread(datafiles=s.num_dfiles) if s.slots > 1 else None) for s in plan.layouts]
    replicas = [Replica.model_validate({"dir": f"pvfs2:{replica_dir(root, k)}", "layout": plan.layout(k).layout,
                                        "g": plan.layout(k).g, "strip_size": plan.layout(k).strip_size,
                                        "datafiles": plan.layout(k).num_dfiles,
                                        "slots": plan.layout(k).slots if plan.layout(k).slots > 1 else None})
                for k in plan.replicas]
    rules.append(Rule(path=f"pvfs2:{variant_dir(root, HYBRID)}", replicas=replicas))
    config = ShimConfig.model_validate({
        "params": ShimParams.of(params),
        "variant": variant, "servers": plan.servers, "rules": rules})
    # no stats block: each launch names its own directory with PFSLAYOUT_SHIM_STATS
    return render_shim_config(config)


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
