#!/usr/bin/env python3
"""Generate shim-configs.json: shim configs rendered by pfslayout.shimconfig, for the C parser to check.

`accepted` are configs built with the typed models and rendered by ``render_shim_config`` — a varied,
deterministic set that together sets every field (hybrid replica sets of 1..8 replicas with every layout,
ROMIO prefixes, per-replica hints, trace, stats, lazy-sync, per-server parameter overrides, a write's own
e_write/beta_write, the shared-core e_shared). The C unit test
``test_config_vectors`` parses each with the shim's own parser and must accept it. `refused` are documents
both sides must refuse; ``field`` is where the C parser's one-line error starts.

    python3 operator/tests/vectors/generate_shim_configs.py > operator/tests/vectors/shim-configs.json
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from pfslayout.shimconfig import (
    MAX_HINTS,
    MAX_REPLICAS,
    CollectiveHints,
    HintValue,
    Layout,
    LazySync,
    Replica,
    Route,
    Rule,
    ServerOverride,
    ShimConfig,
    ShimParams,
    Spread,
    StatsSettings,
    TraceSettings,
    render_shim_config,
)

SEED = 20261123
ETHERNET = ShimParams(e=0.0003, v=1 / (120 * 2**20), alpha_seq=0.0001, alpha_rand=0.0003, beta=1 / (120 * 2**20))
INFINIBAND = ShimParams(e=0.0002, v=1 / (1000 * 2**20), alpha_seq=0.0001, alpha_rand=0.0003, beta=1 / (120 * 2**20))
ROMIO = ("", "ufs:", "pvfs2:", "nfs:")
HINT_CHOICES: list[tuple[str, str | int]] = [
    ("striping_unit", 65536), ("striping_factor", 4), ("cb_nodes", 2), ("cb_buffer_size", 16777216),
    ("romio_cb_read", "enable"), ("romio_cb_write", "disable"), ("cb_config_list", "*:1"),
    ("romio_ds_read", "automatic"),
]


def _replica(rng: random.Random, i: int, servers: int, base: str) -> Replica:
    layout = rng.choice(["1-DV", "1-DH", "2-D", "auto"])
    kw: dict[str, Any] = {"dir": f"{rng.choice(ROMIO)}{base}/.replicas/r{i}-{layout.lower()}", "layout": layout}
    divisors = [g for g in range(1, servers + 1) if servers % g == 0]
    if layout == "2-D":
        kw["g"] = rng.choice(divisors)
    if layout == "auto" or rng.random() < 0.6:
        kw["strip_size"] = rng.choice([4096, 16384, 65536, 262144, 4 << 20])
    if rng.random() < 0.5:
        kw["datafiles"] = rng.randint(1, servers)
    if rng.random() < 0.3:
        kw["hints"] = dict(rng.sample(HINT_CHOICES, rng.randint(1, 3)))
    return Replica(**kw)


def _params(rng: random.Random, servers: int) -> ShimParams:
    base = rng.choice([ETHERNET, INFINIBAND])
    if rng.random() < 0.3:  # heterogeneous servers: accepted, ignored by the shim
        overrides = [ServerOverride(name=f"tcp://ofs-{i}.ofs:3334", beta=base.beta * (1 + i)) for i in range(servers)]
        # the first server overrides every parameter (a slower node in every respect)
        overrides[0] = ServerOverride(name=overrides[0].name, e=base.e * 2, v=base.v * 2, alpha_seq=base.alpha_seq * 2,
                                      alpha_rand=base.alpha_rand * 2, beta=base.beta * 2)
        return base.model_copy(update={"servers": overrides})
    return base


def _random_config(rng: random.Random, k: int) -> ShimConfig:
    servers = rng.choice([1, 2, 4, 6, 8, 16])
    rules = []
    for r in range(rng.randint(0, 4)):
        base = f"/mnt/orangefs/job{k}/d{r}"
        kind = rng.choice(["hints", "replicas", "both"])
        hints = dict(rng.sample(HINT_CHOICES, rng.randint(1, 4))) if kind != "replicas" else None
        replicas = ([_replica(rng, i, servers, base) for i in range(rng.randint(1, MAX_REPLICAS))]
                    if kind != "hints" else None)
        path = rng.choice(ROMIO[:2]) + base + rng.choice(["", "/"])
        rules.append(Rule(path=path, hints=hints, replicas=replicas))
    has_replicas = any(r.replicas for r in rules)
    kw: dict[str, Any] = {"rules": rules or None}
    if has_replicas or rng.random() < 0.5:
        kw["params"] = _params(rng, servers)
        kw["servers"] = servers
    if rng.random() < 0.5:
        kw["variant"] = rng.choice(["corrected", "printed"])
    if rng.random() < 0.3:
        kw["ranks_per_node"] = rng.randint(1, 64)
    roll = rng.random()
    if roll < 0.3:
        kw["trace"] = TraceSettings(enabled=True, dir=f"/var/run/pfs/traces/{k}", job_id=f"run-{k}",
                                    max_records=rng.choice([1, 1024, 1 << 20, 1 << 36]))
    elif roll < 0.45:
        kw["trace"] = TraceSettings(enabled=False)
    if rng.random() < 0.3:
        kw["stats"] = StatsSettings(dir=f"/var/run/pfs/stats/{k}")
    if rng.random() < 0.4:
        kw["lazy_sync"] = LazySync(queue_limit_bytes=rng.choice([0, 1 << 20, 64 << 20, 1 << 40]),
                                   background=rng.choice([True, False, None]), posix=rng.choice([True, False, None]))
    return ShimConfig(**kw)


def accepted() -> list[tuple[str, ShimConfig]]:
    """Hand-picked edge cases first, then the seeded random set."""
    layouts: list[Layout] = ["1-DV", "1-DH", "2-D", "auto"]
    full = [Replica(dir=f"/r/{i}", layout=layout, g=2 if layout == "2-D" else None, strip_size=65536 << i,
                    datafiles=(i % 4) + 1)
            for i, layout in enumerate(layouts * 2)]
    many_hints: dict[str, HintValue] = {f"hint_{i:02d}": i for i in range(MAX_HINTS)}
    out: list[tuple[str, ShimConfig]] = [
        ("minimal", ShimConfig()),
        ("example-of-docs", ShimConfig(
            params=ETHERNET, variant="corrected", servers=4,
            rules=[Rule(path="/mnt/orangefs/ior", hints={"striping_unit": 65536, "striping_factor": 4,
                                                         "romio_cb_write": "enable", "cb_nodes": 2}),
                   Rule(path="/mnt/orangefs/tile", replicas=[
                       Replica(dir="/mnt/orangefs/.replicas/tile-1dh", layout="1-DH", strip_size=16384, datafiles=4),
                       Replica(dir="/mnt/orangefs/.replicas/tile-2d", layout="2-D", g=2, strip_size=262144),
                       Replica(dir="/mnt/orangefs/.replicas/tile-1dv", layout="1-DV", strip_size=4194304)])],
            trace=TraceSettings(enabled=True, dir="/var/run/pfs/traces", job_id="tile-run-7", max_records=1048576),
            stats=StatsSettings(dir="/var/run/pfs/stats"), lazy_sync=LazySync(queue_limit_bytes=67108864))),
        ("eight-replicas", ShimConfig(params=INFINIBAND, servers=4, rules=[Rule(path="/d", replicas=full)])),
        ("sixteen-hints", ShimConfig(rules=[Rule(path="/", hints=many_hints)])),
        ("replica-hints-fill-with-derived", ShimConfig(params=ETHERNET, servers=2, rules=[Rule(path="/x", replicas=[
            Replica(dir="/x1", layout="auto", strip_size=4096, datafiles=2,
                    hints={f"h{i}": "v" for i in range(MAX_HINTS - 2)})])])),
        ("explicit-striping-hint-wins", ShimConfig(params=ETHERNET, servers=8, rules=[Rule(path="/y", replicas=[
            Replica(dir="/y1", layout="1-DH", strip_size=4096, datafiles=8,
                    hints={"striping_unit": 8192, "striping_factor": 8})])])),
        ("printed-with-overrides", ShimConfig(params=_params(random.Random(1), 3), variant="printed", servers=3,
                                              ranks_per_node=12)),
        ("collective-only", ShimConfig(rules=[Rule(path="/mnt/orangefs/vpic", collective=CollectiveHints(
            cb_nodes=3, cb_buffer_size=8 << 20, romio_cb_read="enable", romio_cb_write="disable"))])),
        ("collective-with-hints-and-replicas", ShimConfig(params=ETHERNET, servers=4, rules=[Rule(
            path="/c", hints={"striping_unit": 65536}, collective=CollectiveHints(romio_cb_write="automatic"),
            replicas=[Replica(dir="/c1", layout="1-DV", strip_size=1 << 20)])])),
        ("trace-off-stats-lazy", ShimConfig(trace=TraceSettings(enabled=False, dir="/t"), stats=StatsSettings(dir="/s"),
                                            lazy_sync=LazySync(background=False, posix=False,
                                                                              alongside=False))),
        ("route-plain-paths-to-pvfs2", ShimConfig(route=Route(path="/mnt/orangefs/", prefix="pvfs2:"),
                                                  trace=TraceSettings(enabled=True, dir="pvfs2:/mnt/orangefs/t"))),
        ("route-root", ShimConfig(route=Route(path="/", prefix="lustre:"))),
        ("spread-1dv-and-2d", ShimConfig(servers=6, rules=[
            Rule(path="pvfs2:/mnt/orangefs/ckpt", spread=Spread(datafiles=1)),
            Rule(path="/mnt/orangefs/tiles", spread=Spread(datafiles=3), hints={"striping_unit": 65536})])),
        # per-operation terms: a write's own e and beta, both, each alone, and a zero (set, not unset)
        ("write-params", ShimConfig(
            params=ETHERNET.model_copy(update={"e_write": 0.0006, "beta_write": 2 / (120 * 2**20)}), servers=4,
            rules=[Rule(path="/w", replicas=[Replica(dir="/w1", layout="1-DH", strip_size=65536),
                                             Replica(dir="/w2", layout="1-DV", strip_size=1 << 20)])])),
        ("write-beta-only", ShimConfig(params=INFINIBAND.model_copy(update={"beta_write": 1 / (80 * 2**20)}),
                                       servers=8)),
        ("write-e-zero", ShimConfig(params=ETHERNET.model_copy(update={"e_write": 0}), servers=2)),
        # shared cores: every message of a round also costs e_shared, alone and with the write terms
        ("shared-cores", ShimConfig(params=ETHERNET.model_copy(update={"e_shared": 2e-5}), servers=8)),
        # pinned copies of file-per-process files: 1-DV over four slots (one server each), 2-D over two
        ("pinned-replicas", ShimConfig(params=ETHERNET, servers=4, rules=[Rule(path="/p", replicas=[
            Replica(dir="/p/.replica-1-DH", layout="1-DH", strip_size=16384, datafiles=4),
            Replica(dir="/p/.replica-1-DV", layout="1-DV", datafiles=1, slots=4),
            Replica(dir="/p/.replica-2-D-g2", layout="2-D", g=2, strip_size=8192, datafiles=2, slots=2)])])),
        ("shared-cores-and-writes", ShimConfig(
            params=ETHERNET.model_copy(update={"e_shared": 1.3e-5, "e_write": 0.0005}), servers=4)),
        # network and storage overlapping (a request takes the larger side), alone and with every other term
        ("overlap", ShimConfig(params=ETHERNET.model_copy(update={"overlap": True}), servers=4)),
        ("overlap-off-with-terms", ShimConfig(params=ETHERNET.model_copy(
            update={"overlap": False, "e_shared": 1.3e-5, "e_write": 0.0005, "beta_write": 1e-8}), servers=4)),
        # small split writes costing per byte, alone and with the overlapped write terms
        ("small-writes", ShimConfig(params=ETHERNET.model_copy(update={"v_small_write": 5e-9}), servers=4)),
        ("small-writes-overlapped", ShimConfig(params=ETHERNET.model_copy(
            update={"overlap": True, "v_small_write": 4e-9, "e_write": 0.0005}), servers=8)),
    ]
    rng = random.Random(SEED)
    out += [(f"random-{k:03d}", _random_config(rng, k)) for k in range(60)]
    return out


def refused() -> list[dict[str, Any]]:
    """Documents the model refuses; the C parser must refuse them too, its error starting with ``field``."""
    fmt = {"format": "pfsshim-config/1"}
    prm = ETHERNET.model_dump(exclude_none=True)

    def replica_set(*replicas: dict[str, Any]) -> dict[str, Any]:
        return fmt | {"params": prm, "servers": 4, "rules": [{"path": "/d", "replicas": list(replicas)}]}

    def hints_rule(hints: dict[str, Any], path: str = "/d") -> dict[str, Any]:
        return fmt | {"rules": [{"path": path, "hints": hints}]}

    r0 = "rules[0].replicas[0]"
    return [
        {"name": "unknown-top-level-key", "field": "serverz", "doc": fmt | {"serverz": 4}},
        {"name": "wrong-format", "field": "format", "doc": {"format": "pfsshim-config/2"}},
        {"name": "servers-not-integer", "field": "servers", "doc": fmt | {"servers": 4.0}},
        {"name": "param-missing", "field": "params.beta",
         "doc": fmt | {"params": {k: v for k, v in prm.items() if k != "beta"}}},
        {"name": "param-negative", "field": "params.e", "doc": fmt | {"params": prm | {"e": -1}}},
        {"name": "e-write-negative", "field": "params.e_write", "doc": fmt | {"params": prm | {"e_write": -0.001}}},
        {"name": "beta-write-not-number", "field": "params.beta_write",
         "doc": fmt | {"params": prm | {"beta_write": "fast"}}},
        {"name": "e-shared-negative", "field": "params.e_shared", "doc": fmt | {"params": prm | {"e_shared": -1e-5}}},
        {"name": "v-small-write-negative", "field": "params.v_small_write",
         "doc": fmt | {"params": prm | {"v_small_write": -1e-9}}},
        {"name": "overlap-not-boolean", "field": "params.overlap", "doc": fmt | {"params": prm | {"overlap": "yes"}}},
        {"name": "variant-unknown", "field": "variant", "doc": fmt | {"variant": "journal"}},
        {"name": "replicas-without-params", "field": "params",
         "doc": fmt | {"servers": 4, "rules": [{"path": "/d", "replicas": [{"dir": "/r", "layout": "1-DV"}]}]}},
        {"name": "2d-without-g", "field": f"{r0}.g", "doc": replica_set({"dir": "/r", "layout": "2-D"})},
        {"name": "g-above-servers", "field": f"{r0}.g", "doc": replica_set({"dir": "/r", "layout": "2-D", "g": 5})},
        {"name": "auto-without-strip", "field": f"{r0}.strip_size",
         "doc": replica_set({"dir": "/r", "layout": "auto"})},
        {"name": "unknown-replica-key", "field": f"{r0}.stripe",
         "doc": replica_set({"dir": "/r", "layout": "1-DV", "stripe": 1})},
        {"name": "slots-zero", "field": f"{r0}.slots", "doc": replica_set({"dir": "/r", "layout": "1-DV", "slots": 0})},
        {"name": "slots-times-datafiles-above-servers", "field": f"{r0}.slots",
         "doc": replica_set({"dir": "/r", "layout": "2-D", "g": 2, "datafiles": 2, "slots": 3})},
        {"name": "duplicate-replica-dir", "field": "rules[0].replicas[1]",
         "doc": replica_set({"dir": "/r/", "layout": "1-DV"}, {"dir": "/r", "layout": "1-DH"})},
        {"name": "nine-replicas", "field": "rules[0].replicas",
         "doc": replica_set(*({"dir": f"/r{i}", "layout": "1-DV"} for i in range(MAX_REPLICAS + 1)))},
        {"name": "duplicate-rule-path", "field": "rules[1].path",
         "doc": fmt | {"rules": [{"path": "/d/", "hints": {"a": 1}}, {"path": "/d", "hints": {"b": 2}}]}},
        {"name": "relative-rule-path", "field": "rules[0].path", "doc": hints_rule({"a": 1}, path="d")},
        {"name": "rule-without-hints-or-replicas", "field": "rules[0]", "doc": fmt | {"rules": [{"path": "/d"}]}},
        {"name": "spread-without-servers", "field": "servers",
         "doc": fmt | {"rules": [{"path": "/d", "spread": {"datafiles": 1}}]}},
        {"name": "spread-above-servers", "field": "rules[0].spread.datafiles",
         "doc": fmt | {"servers": 4, "rules": [{"path": "/d", "spread": {"datafiles": 5}}]}},
        {"name": "spread-unknown-key", "field": "rules[0].spread.first",
         "doc": fmt | {"servers": 4, "rules": [{"path": "/d", "spread": {"datafiles": 1, "first": 0}}]}},
        {"name": "spread-on-a-replica-set", "field": "rules[0].spread",
         "doc": replica_set({"dir": "/r", "layout": "1-DV"})
         | {"rules": [{"path": "/d", "spread": {"datafiles": 1}, "replicas": [{"dir": "/r", "layout": "1-DV"}]}]}},
        {"name": "collective-empty", "field": "rules[0].collective",
         "doc": fmt | {"rules": [{"path": "/d", "collective": {}}]}},
        {"name": "collective-cb-mode-unknown", "field": "rules[0].collective.romio_cb_read",
         "doc": fmt | {"rules": [{"path": "/d", "collective": {"romio_cb_read": "on"}}]}},
        {"name": "collective-cb-nodes-zero", "field": "rules[0].collective.cb_nodes",
         "doc": fmt | {"rules": [{"path": "/d", "collective": {"cb_nodes": 0}}]}},
        {"name": "hint-value-boolean", "field": "rules[0].hints.a", "doc": hints_rule({"a": True})},
        {"name": "seventeen-hints", "field": "rules[0].hints.h16",
         "doc": hints_rule({f"h{i:02d}": i for i in range(MAX_HINTS + 1)})},
        {"name": "trace-enabled-without-dir", "field": "trace.dir", "doc": fmt | {"trace": {"enabled": True}}},
        {"name": "trace-job-id-with-slash", "field": "trace.job_id",
         "doc": fmt | {"trace": {"enabled": True, "dir": "/t", "job_id": "a/b"}}},
        {"name": "lazy-sync-alongside-not-bool", "field": "lazy_sync.alongside",
         "doc": fmt | {"lazy_sync": {"alongside": "yes"}}},
        {"name": "lazy-sync-background-not-bool", "field": "lazy_sync.background",
         "doc": fmt | {"lazy_sync": {"background": 1}}},
        {"name": "stats-without-dir", "field": "stats.dir", "doc": fmt | {"stats": {}}},
        {"name": "route-path-with-prefix", "field": "route.path",
         "doc": fmt | {"route": {"path": "pvfs2:/mnt/orangefs", "prefix": "pvfs2:"}}},
        {"name": "route-path-relative", "field": "route.path",
         "doc": fmt | {"route": {"path": "mnt", "prefix": "pvfs2:"}}},
        {"name": "route-prefix-without-colon", "field": "route.prefix",
         "doc": fmt | {"route": {"path": "/mnt/orangefs", "prefix": "pvfs2"}}},
        {"name": "route-unknown-key", "field": "route.to",
         "doc": fmt | {"route": {"path": "/mnt/orangefs", "prefix": "pvfs2:", "to": "x"}}},
    ]


def main() -> None:
    doc = {
        "format": "pfslayout-shim-config-vectors/1",
        "generator": "operator/tests/vectors/generate_shim_configs.py (pfslayout.shimconfig models)",
        "accepted": [{"name": name, "text": render_shim_config(cfg)} for name, cfg in accepted()],
        "refused": [{"name": r["name"], "field": r["field"], "text": json.dumps(r["doc"])} for r in refused()],
    }
    json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
