"""The shim config a LayoutPolicy publishes for its jobs (kinds/layoutpolicy/shim_configmap.py): trace and stats
through MPI-IO into the namespace's directory, and the replica sets of hybrid rules with the calibrated
parameters — every rendering accepted by the model the C parser mirrors."""

from __future__ import annotations

import pytest

from pfslayout.costmodel.params import CostParams
from pfslayout.kinds.layoutpolicy import shim_configmap
from pfslayout.shimconfig import parse_shim_config

PARAMS = CostParams(e=1e-4, v=1e-9, alpha_seq=1e-3, alpha_rand=5e-3, beta=2e-9)
HYBRID = {"path": "/hy", "decision": "hybrid", "applied": True,
          "replicas": [{"layout": "1-DH", "name": "wide", "servers": [0, 1, 2, 3], "stripSize": 65536},
                       {"layout": "2-D", "groups": 2, "name": "grouped", "stripSize": 1048576}]}
STATIC = {"path": "/out", "decision": "static", "layout": {"layout": "1-DV"}}


def test_trace_and_stats_go_through_mpiio_into_the_namespace_directory() -> None:
    spec = {"trace": {"enabled": True, "maxRecordsPerRank": 1000}}
    cfg = parse_shim_config(shim_configmap.shim_config(spec, "/mnt/orangefs", "ns", PARAMS, 4, [STATIC]))
    assert cfg.trace is not None and cfg.trace.dir == "pvfs2:/mnt/orangefs/.pfslayout/traces/ns"
    assert cfg.trace.max_records == 1000 and cfg.trace.job_id is None  # PFSLAYOUT_SHIM_JOB names the files
    assert cfg.stats is not None and cfg.stats.dir == cfg.trace.dir
    assert cfg.rules is None and cfg.params is None  # a static rule without hints in status: nothing to place
    bare = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, []))
    assert bare.trace is None and bare.stats is None


def test_a_hybrid_rule_becomes_the_shims_replica_set_with_the_calibrated_parameters() -> None:
    cfg = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs/", "ns", PARAMS, 4, [STATIC, HYBRID]))
    (rule,) = cfg.rules or []
    assert rule.path == "pvfs2:/mnt/orangefs/hy"
    wide, grouped = rule.replicas or []
    assert (wide.dir, wide.layout, wide.datafiles, wide.strip_size, wide.g) == (
        "pvfs2:/mnt/orangefs/hy/.replica-wide", "1-DH", 4, 65536, None)
    assert (grouped.dir, grouped.layout, grouped.g, grouped.strip_size) == (
        "pvfs2:/mnt/orangefs/hy/.replica-grouped", "2-D", 2, 1048576)
    assert cfg.servers == 4 and cfg.params is not None and cfg.params.alpha_rand == PARAMS.alpha_rand


def test_a_writes_own_e_and_beta_reach_the_shim_when_calibrated() -> None:
    rw = PARAMS.model_copy(update={"e_write": 3e-4, "beta_write": 5e-9})
    cfg = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", rw, 4, [HYBRID]))
    assert cfg.params is not None and (cfg.params.e_write, cfg.params.beta_write) == (3e-4, 5e-9)
    assert (cfg.params.e, cfg.params.beta) == (PARAMS.e, PARAMS.beta)
    only_beta = PARAMS.model_copy(update={"beta_write": 5e-9})
    cfg = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", only_beta, 4, [HYBRID]))
    assert cfg.params is not None and cfg.params.e_write is None and cfg.params.beta_write == 5e-9
    text = shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, [HYBRID])
    assert "e_write" not in text and "beta_write" not in text  # unset: the shim's default (writes as reads)


def test_a_replica_the_cluster_cannot_hold_is_refused_before_it_is_written() -> None:
    too_many = {**HYBRID, "replicas": [{"layout": "2-D", "groups": 8, "name": "x"}]}
    with pytest.raises(ValueError, match=r"g: must be 1..servers \(4\)"):
        shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, [too_many])


def test_route_paths_sends_plain_paths_under_the_mount_through_pvfs2() -> None:
    cfg = parse_shim_config(shim_configmap.shim_config({"shim": {"routePaths": True}}, "/mnt/orangefs/", "ns",
                                                       PARAMS, 4, []))
    assert cfg.route is not None and (cfg.route.path, cfg.route.prefix) == ("/mnt/orangefs", "pvfs2:")
    assert parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, [])).route is None


def test_pinned_slots_of_a_file_per_process_copy_reach_the_shim() -> None:
    per_process = {"path": "/pp", "decision": "hybrid", "applied": True,
                   "replicas": [{"layout": "1-DH", "name": "wide", "stripSize": 4096},
                                {"layout": "1-DV", "name": "deep", "slots": 4}]}
    cfg = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, [per_process]))
    wide, deep = (cfg.rules or [])[0].replicas or []
    assert (wide.slots, deep.slots, deep.dir) == (None, 4, "pvfs2:/mnt/orangefs/pp/.replica-deep")


def test_static_rules_with_fewer_datafiles_than_servers_get_the_shims_spread() -> None:
    # 1-DV and 2-D file per process: the hint Job gives the datafile count, the shim says where each file starts
    dv = {**STATIC, "hints": {"user.pvfs2.num_dfiles": "1", "user.pvfs2.dist_name": "simple_stripe"}}
    two_d = {"path": "/tiles", "decision": "static", "layout": {"layout": "2-D", "groups": 2},
             "hints": {"user.pvfs2.num_dfiles": "2", "user.pvfs2.dist_params": "strip_size:32768"}}
    wide = {"path": "/wide", "decision": "static", "layout": {"layout": "1-DH"},
            "hints": {"user.pvfs2.num_dfiles": "4"}}  # every server: nothing to place
    pinned = {"path": "/pinned", "decision": "static", "layout": {"layout": "1-DV"},
              "hints": {"user.pvfs2.num_dfiles": "1", "user.pvfs2.layout": "4"}}  # LIST: the directory decides
    cfg = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs/", "ns", PARAMS, 4,
                                                       [dv, two_d, wide, pinned, HYBRID]))
    by_path = {r.path: r for r in cfg.rules or []}
    assert set(by_path) == {"pvfs2:/mnt/orangefs/hy", "pvfs2:/mnt/orangefs/out", "pvfs2:/mnt/orangefs/tiles"}
    assert by_path["pvfs2:/mnt/orangefs/out"].spread.datafiles == 1  # type: ignore[union-attr]
    assert by_path["pvfs2:/mnt/orangefs/tiles"].spread.datafiles == 2  # type: ignore[union-attr]
    assert cfg.servers == 4
    # without a replica set no parameters are needed: the spread is placement, not costing
    alone = parse_shim_config(shim_configmap.shim_config({}, "/mnt/orangefs", "ns", PARAMS, 4, [dv]))
    assert alone.params is None and alone.servers == 4 and len(alone.rules or []) == 1
