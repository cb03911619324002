"""Trace summaries (planner/summary.py, `pfslayout summarise`): what a LayoutPolicy keeps of a traced run
must plan exactly as the trace itself does, and be small."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pfslayout.cli import main
from pfslayout.costmodel import SEED_ETHERNET
from pfslayout.planner import plan_from_file
from pfslayout.planner.summary import MAX_ROWS, TraceSummary, owner_of, plan_summary, summarise
from pfslayout.traces import load_trace
from pfslayout.traces.model import OP_READ, OP_WRITE
from pfslayout.traces.shim import shim_file_name, write_shim_trace

RANKS = 4


def _run(tmp: Path, size: int = 1 << 20, reps: int = 8, shared_dir: str = "/mnt/ofs/results") -> Path:
    """4 ranks: each writes its own file under /mnt/ofs/ckpt (sequential), and all read one shared file
    under `shared_dir` at strided offsets (pvfs2: prefix, as ROMIO names it)."""
    for r in range(RANKS):
        k = np.arange(reps)
        t0 = r * 1e-3 + k * 0.01
        files = [f"/mnt/ofs/ckpt/rank{r}.dat", f"pvfs2:{shared_dir}/shared.dat"]
        start = np.concatenate([t0, t0 + 1.0])
        write_shim_trace(tmp / shim_file_name(r, "job"), rank=r, comm_size=RANKS, files=files,
                         start=start, end=start + 0.005, offset=np.concatenate([k * size, (k * RANKS + r) * size]),
                         size=np.full(2 * reps, size), file_id=np.repeat([0, 1], reps),
                         op=np.repeat([OP_WRITE, OP_READ], reps), node_id=r // 2, ranks_on_node=2)
    return tmp


def test_summary_plans_exactly_as_the_trace(tmp_path: Path) -> None:
    d = _run(tmp_path)
    trace = load_trace(d)
    found = summarise(trace, ["/mnt/ofs/ckpt", "/mnt/ofs/results", "/mnt/ofs/none"])
    assert set(found) == {"/mnt/ofs/ckpt", "/mnt/ofs/results"}
    ckpt, res = found["/mnt/ofs/ckpt"], found["/mnt/ofs/results"]
    assert (ckpt.sharing, ckpt.files, ckpt.ranks, ckpt.requests, ckpt.read_fraction) == ("file-per-process", 4, 4,
                                                                                          32, 0.0)
    assert (res.sharing, res.files, res.read_fraction, res.dominant_size) == ("shared", 1, 1.0, 1 << 20)
    direct = {dd.target: dd for dd in plan_from_file(str(d), None, 8, SEED_ETHERNET).decisions}
    for path, s in found.items():
        via = plan_summary(TraceSummary.model_validate_json(s.model_dump_json()), 8, SEED_ETHERNET).decisions[0]
        ref = direct.get(path) or direct[f"pvfs2:{path}"]  # plan_trace keeps the ROMIO prefix
        assert via.source == "trace"
        assert via.choice == ref.choice
        for a, b in zip(sorted(via.candidates, key=lambda c: c.label), sorted(ref.candidates, key=lambda c: c.label)):
            assert a.label == b.label and a.total == pytest.approx(b.total, rel=1e-9)


def test_many_sizes_are_rounded_not_dropped(tmp_path: Path) -> None:
    n = MAX_ROWS + 500
    size = np.arange(1, n + 1) * 4096 + 7
    start = np.arange(n) * 1.0
    write_shim_trace(tmp_path / shim_file_name(0, "job"), rank=0, comm_size=1, files=["/fs/a/x"], start=start,
                     end=start + 0.5, offset=np.cumsum(size) - size, size=size, file_id=np.zeros(n, int),
                     op=np.full(n, OP_WRITE))
    s = summarise(load_trace(tmp_path), ["/fs/a"])["/fs/a"]
    assert s.rounded and len(s.rows) < 64
    assert sum(r[4] for r in s.rows) == n and s.requests == n


def test_longest_prefix_owns_a_file() -> None:
    assert owner_of("/m/a/b/f", ["/m/a", "/m/a/b"]) == "/m/a/b"
    assert owner_of("/m/ab/f", ["/m/a"]) is None
    assert owner_of("/m/a/f", ["/"]) == "/"


def test_cli_prints_one_marker_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run(tmp_path)
    main(["summarise", "--trace", str(d), "--path", "/mnt/ofs/results", "--path", "/mnt/ofs/other",
          "--marker", "PFSLAYOUT-TRACE-SUMMARY"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("PFSLAYOUT-TRACE-SUMMARY {")
    doc = json.loads(out[0].split(" ", 1)[1])
    assert doc["ranks"] == RANKS and doc["unmatched"] == ["/mnt/ofs/other"]
    assert doc["summaries"]["/mnt/ofs/results"]["requests"] == RANKS * 8


def test_cli_refuses_a_relative_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["summarise", "--trace", str(_run(tmp_path)), "--path", "results"])
    assert exc.value.code == 2
    assert "--path" in capsys.readouterr().err
