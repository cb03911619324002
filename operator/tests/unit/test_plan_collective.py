"""Collective I/O (seed 004) through the planner: collective-buffering hints beside the layout, 004 Fig. 3
reproduced from a trace, and the hints carried by the shim config (checked by its C parser elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfslayout.planner import plan_from_file
from pfslayout.shimconfig import CollectiveHints, Rule, ShimConfig, parse_shim_config, render_shim_config
from pfstestkit.cli import run_inproc

MIB = 1 << 20


def _fig3(tmp_path: Path) -> tuple[Path, Path]:
    """004 Fig. 3 as a traced collective read (docs/seeds.md §2.8): five ranks p0..p4 on one node, three
    aggregators p0, p2, p4 (cb_nodes 3; spread over the node's ranks), one shared file. The call covers
    18 MiB, so each aggregator's file domain is D = 6 MiB: p0 and p1 own 3 MiB each of domain 0, p2 and
    p3 of domain 1, p4 all of domain 2. With α = 0 and β = 1 s/MiB every aggregator reads for 6 s (= 6t,
    t = 1 s); p0 and p2 each exchange 3 MiB with a neighbour at B_a = 0.5 MiB/s and γ = 0, a 6 s shuffle
    (004 Eq. (1)); p4 moves nothing. p4's request reaches the server first, then p0's, then p2's."""
    rows = ["rank,op,offset,size,start,end,file,node,collective"]
    layout = [(0, 0, 3, 0.1), (1, 3, 3, 0.1), (2, 6, 3, 0.2), (3, 9, 3, 0.2), (4, 12, 6, 0.0)]
    for rank, off, size, start in layout:
        rows.append(f"{rank},read,{off * MIB},{size * MIB},{start},{start + 1},/data/fig3/f,n0,1")
    trace = tmp_path / "fig3.csv"
    trace.write_text("\n".join(rows) + "\n")
    params = tmp_path / "fig3.yaml"
    params.write_text(f"e: 0.0003\nv: 1.0e-9\nalpha_seq: 0\nalpha_rand: 0\nbeta: {1 / MIB}\n"
                      f"shuffle: {{B_a: {MIB // 2}, B_e: {MIB // 2}, gamma: 0}}\n")
    return trace, params


def test_fig3_worked_example_through_the_planner(tmp_path: Path) -> None:
    # 004 Fig. 3: served FIFO (p4, p0, p2) one server finishes the last shuffle at 3·6t + 6t = 24t; the HIO
    # order (AD = max T − T_i = 0, 0, 6t: slowest aggregators first) at 18t; p4 alone needs 6t, so it could
    # wait 18t − 6t = 12t at no loss.
    from pfslayout.costmodel import load_params

    trace, params = _fig3(tmp_path)
    plan = plan_from_file(trace, "csv", 3, load_params(params), cb_nodes=3)
    (d,) = plan.decisions
    c = d.collective
    assert c is not None and c.ranks == 5 and c.reads == 5 and c.writes == 0
    assert c.aggregator_ranks == [0, 2, 4]
    assert c.shuffle == pytest.approx([6.0, 6.0, 0.0])
    assert c.acceptable_delay == pytest.approx([0.0, 0.0, 6.0])
    assert c.hio is not None
    assert c.hio.fifo_order == ["p4", "p0", "p2"] and c.hio.fifo_makespan == pytest.approx(24.0)
    assert c.hio.hio_order == ["p0", "p2", "p4"] and c.hio.hio_makespan == pytest.approx(18.0)
    p4_alone = 6.0 + 0.0  # its read, no shuffle
    assert c.hio.hio_makespan - p4_alone == pytest.approx(12.0)
    assert "romio_cb_read" in c.hints and "004 Eq. (1)" in d.explanation and "HIO order" in d.explanation


def test_small_collective_writes_enable_collective_buffering(tmp_path: Path) -> None:
    # 16 ranks on 4 nodes write 4 KiB each per collective call to one shared file, n = 4, seed Ethernet.
    # Independent: 1-DV with p = 16, m = 4 → max(m, ⌈p/n⌉)(e + s v) + … ≈ 4e per request.
    # Two-phase with A aggregators writes A requests of 64 KiB/A: fewer concurrent set-ups (⌈A/n⌉) for a
    # shuffle of a few 4 KiB messages (γ = e plus 4 KiB/B) — cheaper, so collective buffering is enabled.
    rows = ["rank,op,offset,size,start,end,file,node,collective"]
    for call in range(4):
        for r in range(16):
            off = (call * 16 + r) * 4096
            rows.append(f"{r},write,{off},4096,{call},{call + 0.5},/data/ckpt/shared,n{r // 4},1")
    trace = tmp_path / "w.csv"
    trace.write_text("\n".join(rows) + "\n")
    (d,) = plan_from_file(trace, "csv", 4).decisions
    c = d.collective
    assert c is not None and c.two_phase and c.writes == 64 and "romio_cb_read" not in c.hints
    assert c.hints["romio_cb_write"] == "enable" and c.cb_nodes == c.hints["cb_nodes"]
    assert min(r.total for r in c.candidates) < c.independent
    assert int(c.hints["cb_buffer_size"]) >= 16 * 4096 // int(c.hints["cb_nodes"])
    # the advice goes to the job through the shim config, which its C parser checks (pfsshim-check)
    rule = Rule(path="/data/ckpt", collective=CollectiveHints.model_validate(c.hints))
    text = render_shim_config(ShimConfig(rules=[rule]))
    assert parse_shim_config(text).rules[0].collective == rule.collective  # type: ignore[index]
    assert json.loads(text)["rules"][0]["collective"]["romio_cb_write"] == "enable"


def test_cli_prints_the_collective_hints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace, params = _fig3(tmp_path)
    r = run_inproc(capsys, "plan", "--trace", str(trace), "--servers", "3", "--params", str(params),
                   "--cb-nodes", "3")
    assert r.code == 0, r.err
    assert "collective hint romio_cb_read=" in r.out
    doc = run_inproc(capsys, "plan", "--trace", str(trace), "--servers", "3", "--params", str(params),
                     "--cb-nodes", "3", "--json")
    assert json.loads(doc.out)["decisions"][0]["collective"]["hio"]["hio_makespan"] == pytest.approx(18.0)


def test_independent_trace_has_no_collective_advice(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("rank,op,offset,size,start,end,file\n0,read,0,4096,0,1,/d/f\n1,read,4096,4096,0,1,/d/f\n")
    assert plan_from_file(trace, "csv", 4).decisions[0].collective is None


def test_collective_calls_are_costed_with_their_own_operations() -> None:
    # a write-only call pays a write's terms (here the small-write one: 16 KiB on 1-DH over 4 servers is 4 KiB
    # pieces); a read-only call does not — as the target's layout was costed (CostParams.mixed)
    from pfslayout.costmodel import CostParams, cost
    from pfslayout.planner.collective import CollectiveCall, advise

    params = CostParams(e=1e-4, v=1e-8, alpha_seq=1e-5, alpha_rand=1e-5, beta=4e-8, v_small_write=1e-8)
    reads, writes = (advise(CollectiveCall.contiguous(4, 16384, r, w), "1-DH", None, 4, params, "corrected")
                     for r, w in ((1, 0), (0, 1)))
    assert reads.independent == pytest.approx(float(cost("1-DH", 4, 4, 1, 16384, params=params.for_op("read")).total))
    assert writes.independent == pytest.approx(float(cost("1-DH", 4, 4, 1, 16384, params=params).total))
    assert writes.independent - reads.independent == pytest.approx(4 * 16384 * 1e-8)
