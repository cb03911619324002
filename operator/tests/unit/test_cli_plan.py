"""`pfslayout plan` from a CSV trace and from a workload description."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfstestkit.cli import one_line_error, real_entry_point_runs, run_inproc

MIB = 1 << 20


def _csv(tmp_path: Path) -> Path:
    rows = ["rank,op,offset,size,start,end,file"]
    for r in range(32):
        rows.append(f"{r},read,{r * MIB},{MIB},0.0,0.5,/scratch/run/shared.dat")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _workload(tmp_path: Path) -> Path:
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n"
                    "  - {name: /data/ckpt, processes: 8, procs_per_node: 1, request_sizes: {262144: 1},"
                    " random_fraction: 1.0}\n")
    return path


def test_plan_trace_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_inproc(capsys, "plan", "--trace", str(_csv(tmp_path)), "--format", "csv", "--servers", "16", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["format"] == "pfslayout-plan/1" and doc["servers"] == 16
    (d,) = doc["decisions"]
    assert d["target"] == "/scratch/run" and d["sharing"] == "shared" and d["requests"] == 32
    assert {c["label"] for c in d["candidates"]} == {"1-DH", "1-DV", "2-D(g=2)", "2-D(g=4)", "2-D(g=8)"}
    assert d["choice"] == min(d["candidates"], key=lambda c: c["total"])["label"]
    assert d["hints"]["xattrs"]["user.pvfs2.dist_name"] == "simple_stripe"


def test_plan_workload_json_and_variant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    w = str(_workload(tmp_path))
    doc = json.loads(run_inproc(capsys, "plan", "--workload", w, "--servers", "16", "--json").out)
    d = doc["decisions"][0]
    assert d["target"] == "/data/ckpt" and d["choice"] == "2-D(g=8)"
    by = {c["label"]: c for c in d["candidates"]}
    assert by["1-DH"]["total"] == pytest.approx(8 * 10.325e-3, abs=1e-6)  # corrected 1-DH of docs/seeds.md §2.9 row 1
    printed = json.loads(run_inproc(capsys, "plan", "--workload", w, "--servers", "16", "--variant", "printed",
                                    "--json").out)
    pby = {c["label"]: c for c in printed["decisions"][0]["candidates"]}
    assert pby["1-DH"]["total"] == pytest.approx(8 * 6.8833e-3, abs=1e-6)  # the printed table's 6.8833 ms


def test_plan_table_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_inproc(capsys, "plan", "--workload", str(_workload(tmp_path)), "--servers", "16")
    assert r.code == 0 and "2-D(g=8)" in r.out and "setfattr -n user.pvfs2.num_dfiles -v '2'" in r.out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--servers", "0", "--workload", "W"], "--servers"),
        (["--servers", "4"], "--trace"),
        (["--servers", "4", "--workload", "W", "--trace", "T"], "--trace"),
        (["--servers", "4", "--trace", "T", "--format", "xml"], "--format"),
        (["--servers", "4", "--workload", "W", "--variant", "x"], "variant"),
        (["--servers", "4", "--workload", "W", "--g", "5"], "--g"),
        (["--servers", "4", "--workload", "/nonexistent.yaml"], "--workload"),
        (["--servers", "4", "--trace", "EMPTY"], "empty.csv: has a header but no requests"),
    ],
)
def test_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], field: str) -> None:
    w, t = str(_workload(tmp_path)), str(_csv(tmp_path))
    empty = tmp_path / "empty.csv"
    empty.write_text("rank,op,offset,size,start,end,file\n")
    argv = ["plan"] + [{"W": w, "T": t, "EMPTY": str(empty)}.get(a, a) for a in args]
    one_line_error(run_inproc(capsys, *argv), field)


def test_real_entry_point(tmp_path_factory: pytest.TempPathFactory) -> None:
    res = real_entry_point_runs(tmp_path_factory.mktemp("cli-real"))
    one_line_error(res["plan_bad"], "procs_per_node (9) exceeds processes (4)")


def test_plan_shim_trace_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The shim's per-rank binary traces, 8 ranks on 2 nodes, each writing its own file."""
    import numpy as np

    from pfslayout.traces import OP_WRITE, write_shim_trace
    from pfslayout.traces.shim import SUFFIX

    run = tmp_path / "run"
    run.mkdir()
    for rank in range(8):
        k = 4
        write_shim_trace(run / f"rank{rank}{SUFFIX}", rank=rank, comm_size=8, files=[f"/out/ckpt.{rank}"],
                         start=np.arange(k, dtype=float), end=np.arange(k, dtype=float) + 0.5,
                         offset=np.arange(k, dtype=np.int64) * MIB, size=np.full(k, MIB, dtype=np.int64),
                         file_id=np.zeros(k, dtype=np.int32), op=np.full(k, OP_WRITE, dtype=np.uint8),
                         node_id=rank // 4, ranks_on_node=4)
    r = run_inproc(capsys, "plan", "--trace", str(run), "--format", "shim", "--servers", "4", "--json")
    assert r.code == 0, r.err
    (d,) = json.loads(r.out)["decisions"]
    assert d["target"] == "/out" and d["sharing"] == "file-per-process" and d["requests"] == 32
    assert d["read_fraction"] == 0.0 and d["mode"] == "static"
