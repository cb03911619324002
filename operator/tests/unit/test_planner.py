"""Planner: choices, explanations, hints, hybrid replica sets, heterogeneous servers, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pfslayout.costmodel import MIB, SEED_ETHERNET, CostParams, ServerParams, cost
from pfslayout.errors import InputError
from pfslayout.planner import Plan, WorkloadDescription, load_workloads, plan_trace, plan_workload, useful_groups
from pfslayout.planner.hints import hints_for, pinned_slots, slot_count
from pfslayout.traces import OP_READ, OP_WRITE, Trace, load_trace


def wl(**kw: Any) -> WorkloadDescription:
    base: dict[str, Any] = {"processes": 8, "procs_per_node": 1, "request_sizes": {256 * 1024: 1},
                            "random_fraction": 1.0}
    return WorkloadDescription(**(base | kw))


def test_useful_groups() -> None:
    assert useful_groups(16) == [2, 4, 8]
    assert useful_groups(7) == [] and useful_groups(1) == []


def test_digest_row1_choice_and_candidate_totals() -> None:
    plan = plan_workload(wl(), 16)
    d = plan.decisions[0]
    assert d.choice == "2-D(g=8)" and d.mode == "static"
    by = {c.label: c for c in d.candidates}
    assert set(by) == {"1-DH", "1-DV", "2-D(g=2)", "2-D(g=4)", "2-D(g=8)"}
    # 8 requests, each the docs/seeds.md §2.9 per-request cost (corrected 1-DH differs from the printed 6.8833 ms)
    assert by["1-DV"].total == pytest.approx(8 * 4.7667e-3, abs=1e-6)
    assert by["2-D(g=8)"].total == pytest.approx(8 * 4.0250e-3, abs=1e-6)
    one = cost("1-DH", 8, 16, 1, 256 * 1024, random=True)
    assert by["1-DH"].network == pytest.approx(8 * float(one.network))
    assert by["1-DH"].storage == pytest.approx(8 * float(one.storage))
    for c in d.candidates:
        assert c.label in d.explanation
    assert d.margin == pytest.approx((by["1-DV"].total - by["2-D(g=8)"].total) / by["2-D(g=8)"].total)


def test_printed_variant_changes_the_p1_choice() -> None:
    small = wl(processes=1, request_sizes={4096: 1})
    assert plan_workload(small, 16, variant="printed").decisions[0].choice == "1-DH"
    assert plan_workload(small, 16, variant="corrected").decisions[0].choice == "1-DV"


def test_hints_file_per_process_and_shared() -> None:
    d = plan_workload(wl(), 16).decisions[0]
    assert d.hints.xattrs == {"user.pvfs2.num_dfiles": "2", "user.pvfs2.dist_name": "simple_stripe",
                              "user.pvfs2.dist_params": "strip_size:131072"}
    shared = plan_workload(wl(processes=64, procs_per_node=2, request_sizes={MIB: 1}, sharing="shared",
                              random_fraction=0.0), 16).decisions[0]
    assert shared.choice == "1-DV"
    assert shared.hints.xattrs["user.pvfs2.dist_params"] == f"strip_size:{MIB}"
    assert shared.hints.num_dfiles == 16
    fpp = plan_workload(wl(processes=64, procs_per_node=2, request_sizes={MIB: 1}), 16).decisions[0]
    assert fpp.hints.xattrs == {"user.pvfs2.num_dfiles": "1", "user.pvfs2.dist_name": "simple_stripe"}
    big = plan_workload(wl(processes=1, request_sizes={64 * MIB: 1}), 16).decisions[0]
    assert big.choice == "1-DH"
    assert big.hints.xattrs["user.pvfs2.num_dfiles"] == "16"
    assert big.hints.strip_size == 64 * 1024


def _mixed_trace(read: bool) -> Trace:
    """Phase A: 1 rank, 64 MiB requests (1-DH country); phase B: 64 ranks, 4 KiB (1-DV country)."""
    n_a, n_b = 4, 64
    size = np.r_[np.full(n_a, 64 * MIB), np.full(n_b, 4096)].astype(np.int64)
    rank = np.r_[np.zeros(n_a), np.arange(n_b)].astype(np.int32)
    k = size.size
    t = Trace(rank=rank, op=np.full(k, OP_READ if read else OP_WRITE, np.uint8), offset=np.zeros(k, np.int64),
              size=size, start=np.arange(k, dtype=float), end=np.arange(k, dtype=float) + 0.5,
              file_id=np.zeros(k, np.int32), files=["/data/mixed/shared.dat"])
    t.p = np.r_[np.ones(n_a), np.full(n_b, 64)].astype(np.int32)
    t.m = np.ones(k, np.int32)
    t.sequential = np.ones(k, bool)
    return t


def test_hybrid_for_mixed_read_mostly_trace() -> None:
    plan = plan_trace(_mixed_trace(read=True), 16, delta=10.0)
    d = plan.decisions[0]
    assert d.target == "/data/mixed" and d.sharing == "shared"
    assert d.mode == "hybrid" and d.hybrid is not None
    labels = [r.label for r in d.hybrid.replicas]
    assert "1-DV" in labels and len(labels) >= 2
    best = min(c.total for c in d.candidates)
    assert d.hybrid.predicted_total < best
    assert d.hybrid.storage_factor == len(labels)
    assert all(r.hints.xattrs["user.pvfs2.dist_name"] for r in d.hybrid.replicas)


def test_a_replica_set_pays_for_writing_every_copy() -> None:
    # the read-mostly mixed trace with 13 of its 68 requests turned into writes: still above the
    # read-mostly gate, but each write would go to all three copies — more than the reads save
    t = _mixed_trace(read=True)
    t.op[: t.op.size // 5] = OP_WRITE
    d = plan_trace(t, 16, delta=10.0).decisions[0]
    assert d.read_fraction >= 0.5 and d.mode == "static" and d.hybrid is None
    assert "writing every copy (19% writes)" in d.explanation
    # all reads: the same trace gets its replica set, and its prediction counts no write
    d = plan_trace(_mixed_trace(read=True), 16, delta=10.0).decisions[0]
    assert d.mode == "hybrid" and d.hybrid is not None and d.hybrid.predicted_total < min(c.total for c in d.candidates)
    assert "each write to every copy" in d.hybrid.reason


def test_a_trace_charges_each_write_where_it_is() -> None:
    # the same read fraction (64 of 68 requests read), different writes: four 64 MiB requests written to
    # every copy cost more than the small reads save; four 4 KiB writes do not
    big, small = _mixed_trace(read=True), _mixed_trace(read=True)
    big.op[:4] = OP_WRITE
    small.op[4:8] = OP_WRITE
    d_big, d_small = (plan_trace(t, 16, delta=10.0).decisions[0] for t in (big, small))
    assert d_big.read_fraction == d_small.read_fraction == 64 / 68
    assert d_big.mode == "static" and d_small.mode == "hybrid"


def test_no_hybrid_for_write_heavy_or_when_clear() -> None:
    d = plan_trace(_mixed_trace(read=False), 16, delta=10.0).decisions[0]
    assert d.mode == "static" and "read" in d.explanation
    d = plan_trace(_mixed_trace(read=True), 16, delta=0.0).decisions[0]
    assert d.mode == "static" and d.hybrid is None


def test_trace_from_csv_per_directory_and_file(tmp_path: Path) -> None:
    rows = ["rank,op,offset,size,start,end,file"]
    for r in range(16):
        for k in range(4):
            rows.append(f"{r},read,{(k * 16 + r) * MIB},{MIB},{k}.0,{k}.5,/scratch/run/shared.dat")
    for r in range(2):
        for k in range(4):
            rows.append(f"{r},write,{k * 4096},4096,{10 + k}.0,{10 + k}.5,/home/u/out.{r}")
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    trace = load_trace(path, "csv")
    plan = plan_trace(trace, 8)
    by = {d.target: d for d in plan.decisions}
    assert set(by) == {"/scratch/run", "/home/u"}
    assert by["/scratch/run"].sharing == "shared" and by["/home/u"].sharing == "file-per-process"
    assert by["/scratch/run"].requests == 64 and by["/scratch/run"].dominant_size == MIB
    assert by["/home/u"].read_fraction == 0.0
    per_file = plan_trace(load_trace(path, "csv", group="file"), 8, per="file")
    assert {d.target for d in per_file.decisions} == {"/scratch/run/shared.dat", "/home/u/out.0", "/home/u/out.1"}
    both = plan_trace(trace, 8, per="both")
    assert [(d.kind, d.target) for d in both.decisions] == [
        ("directory", "/home/u"), ("directory", "/scratch/run"), ("file", "/home/u/out.0"), ("file", "/home/u/out.1"),
        ("file", "/scratch/run/shared.dat")]
    assert sum(d.requests for d in both.decisions if d.kind == "file") == len(trace)
    assert [d.sharing for d in both.decisions if d.kind == "file"] == ["file-per-process"] * 2 + ["shared"]
    # JSON round trip: the plan is plain data
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    json.loads(plan.model_dump_json())


def test_heterogeneous_servers_get_varstrip() -> None:
    servers = [ServerParams(beta=SEED_ETHERNET.beta * f) for f in (1, 1, 2, 4)]
    prm = SEED_ETHERNET.model_copy(update={"servers": servers})
    d = plan_workload(wl(processes=1, request_sizes={64 * MIB: 1}), 4, params=prm).decisions[0]
    assert d.choice == "1-DH"
    h = d.hints
    assert h.dist_name == "varstrip_dist" and h.xattrs["user.pvfs2.dist_name"] == "varstrip_dist"
    assert h.strips is not None and len(h.strips) == 4
    assert h.strips[0] == h.strips[1] > h.strips[2] > h.strips[3]
    assert h.xattrs["user.pvfs2.dist_params"] == "strips:" + ";".join(f"{i}:{s}" for i, s in enumerate(h.strips))
    assert h.xattrs["user.pvfs2.layout"] == "1"
    named = prm.model_copy(update={"servers": [s.model_copy(update={"name": f"tcp://ofs-{i}:3334"})
                                               for i, s in enumerate(servers)]})
    h2 = plan_workload(wl(processes=1, request_sizes={64 * MIB: 1}), 4, params=named).decisions[0].hints
    assert h2.xattrs["user.pvfs2.layout"] == "4"
    assert h2.xattrs["user.pvfs2.server_list"] == "00004 " + " ".join(f"tcp://ofs-{i}:3334" for i in range(4))


def test_extra_g_not_dividing_n() -> None:
    plan = plan_workload(wl(), 8, groups=[3])
    assert "2-D(g=3)" in {c.label for c in plan.decisions[0].candidates}
    assert plan.groups_considered == [2, 4, 3] and "g=[3]" in plan.groups_note


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: plan_workload(wl(), 0), "--servers"),
        (lambda: plan_workload(wl(), 8, delta=-1), "delta"),
        (lambda: plan_workload(wl(), 8, groups=[9]), "--g"),
        (lambda: plan_workload(wl(), 8, variant="journal"), "variant"),
        (lambda: plan_workload([], 8), "workloads"),
    ],
)
def test_bad_input(call: Callable[[], object], field: str) -> None:
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field


def test_underived_trace_rejected() -> None:
    t = _mixed_trace(True)
    t.p = None
    with pytest.raises(InputError, match=r"^--trace: p, m and sequential are not derived"):
        plan_trace(t, 8)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("processes: 4\nrequest_sizes: {4096: 1}\nprocs_per_node: 8\n", r"procs_per_node \(8\) exceeds"),
        ("processes: 0\nrequest_sizes: {4096: 1}\n", r": processes: "),
        ("processes: 4\n", r": request_sizes: is required"),
        ("processes: 4\nrequest_sizes: {4096: 1}\nshraing: shared\n", r": shraing: is not a known field"),
        ("workloads:\n  - processes: 4\n    request_sizes: [{size: -1, weight: 1}]\n",
         r": workloads\.0\.request_sizes\.0\.size: "),
    ],
)
def test_workload_file_errors(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as err:
        load_workloads(path)
    assert "\n" not in str(err.value)


def test_workload_file_forms(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"name": "/a", "processes": 4, "request_sizes": [{"size": 4096, "weight": 2}]}))
    many = tmp_path / "many.yaml"
    many.write_text("- {name: /a, processes: 4, request_sizes: {4096: 2}}\n- {name: /b, processes: 2, "
                    "request_sizes: {65536: 1}}\n")
    assert [w.name for w in load_workloads(one)] == ["/a"]
    assert [w.name for w in load_workloads(many)] == ["/a", "/b"]
    assert load_workloads(one)[0] == load_workloads(many)[0]


def test_param_for_server_defaults() -> None:
    prm = CostParams.model_validate({**SEED_ETHERNET.scalars(), "servers": [ServerParams(name="a")]})
    assert not prm.heterogeneous


def test_heterogeneous_file_per_process_placement() -> None:
    servers = [ServerParams(beta=SEED_ETHERNET.beta * f) for f in (1, 1, 2, 4)]
    prm = SEED_ETHERNET.model_copy(update={"servers": servers})
    d = plan_workload(wl(processes=64, procs_per_node=2, request_sizes={MIB: 1}, random_fraction=0.0), 4,
                      params=prm).decisions[0]
    assert d.choice == "1-DV" and d.hints.num_dfiles == 1 and d.hints.file_placement is not None
    counts = np.bincount(d.hints.file_placement, minlength=4).tolist()
    assert sum(counts) == 64 and counts[0] == counts[1] > counts[2] > counts[3]
    # speeds 1/(beta_j + v): 1/2 : 1/2 : 1/3 : 1/5 of 1/beta → shares 0.32, 0.32, 0.21, 0.13
    assert counts == [21, 21, 14, 8]


def test_pinned_slots_spread_file_per_process_layouts_over_their_own_servers() -> None:


    urls = [f"tcp://ofs-{i}:3334" for i in range(4)]
    one = pinned_slots(hints_for("1-DV", None, 4, "file-per-process", 16384).xattrs, urls)
    assert [x["user.pvfs2.server_list"] for x in one] == [f"00001 {u}" for u in urls]
    assert all(x["user.pvfs2.layout"] == "4" and x["user.pvfs2.num_dfiles"] == "1" for x in one)
    two = pinned_slots(hints_for("2-D", 2, 4, "file-per-process", 16384).xattrs, urls)
    assert [x["user.pvfs2.server_list"] for x in two] == [f"00002 {urls[0]} {urls[1]}", f"00002 {urls[2]} {urls[3]}"]
    assert all(x["user.pvfs2.dist_params"] == "strip_size:8192" for x in two)
    # a layout over every server has nothing to pin; 2-D with n/g not dividing n leaves servers over
    assert pinned_slots(hints_for("1-DH", None, 4, "file-per-process", 16384).xattrs, urls) == []
    assert slot_count(2, 5) == 2 and slot_count(3, 4) == 0 and slot_count(1, 8) == 8
