"""Planning from Darshan counter logs (no DXT): the pinned darshan wheel's own example logs, each with its
decision derived by hand from the counters and the corrected model (docs/cost-model.md), and the one-line
refusals of logs this path cannot use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfslayout.errors import InputError
from pfslayout.planner import plan_from_file
from pfslayout.planner.counters import counter_targets
from pfslayout.traces.darshan_counters import read_darshan_counters
from pfstestkit.cli import one_line_error, run_inproc

darshan = pytest.importorskip("darshan")
ROOT = Path(darshan.__file__).parent
EXAMPLES = ROOT / "examples" / "example_logs"
GRAPH = ROOT / "examples" / "darshan-graph"
VPIC = EXAMPLES / "example.darshan"  # VPIC-IO, 2048 ranks, POSIX + MPI-IO, no DXT
GOODOST = ROOT / "tests" / "input" / "sample-goodost.darshan"  # 48 ranks, POSIX only
ONE_WRITER = GRAPH / "pq_app_write_id71296_7-31-5657-2037904274838284930_55623.darshan"
NO_COUNTERS = EXAMPLES / "noposix.darshan"  # LUSTRE and STDIO modules only

E, ALPHA_SEQ, ALPHA_RAND = 0.0003, 0.0001, 0.0003
V = BETA = 1.0 / (120 * 2**20)  # 003 Table 3, MB read as MiB


def _costs(plan_decision: object) -> dict[str, float]:
    return {c.label: c.total for c in plan_decision.candidates}  # type: ignore[attr-defined]


def test_one_rank_small_writes_pick_1dv() -> None:
    # pq_app_write …71296: one rank (nprocs 1), POSIX record of .../darshan-graph/A: POSIX_WRITES 10,
    # POSIX_BYTES_WRITTEN 10000, ACCESS1 = 1000 B × 10, POSIX_CONSEC_WRITES 9 → 10 requests of s = 1000 B,
    # 9 sequential (α_seq) and 1 random (α_rand); p = 1, m = 1, n = 4.
    # Per request (corrected): 1-DV = e + sv + α + sβ = 10(e + 2sv) + (9α_seq + α_rand)
    # = 10(0.0003 + 2·7.947e-6) + 0.0012 = 4.359 ms in all. Realised by the hints at 1000 B, 1-DH and 2-D
    # have 4 KiB strips (the floor), so a 1000 B request touches one server: both cost exactly what 1-DV
    # costs (not 4e + … and 2e + … as their tables would say for a request spread over 4 or 2 servers),
    # and the tie goes to 1-DV itself, the layout they behave as.
    plan = plan_from_file(ONE_WRITER, "darshan", 4)
    (d,) = plan.decisions
    assert d.source == "darshan-counters" and d.kind == "directory" and d.target.endswith("darshan-graph")
    assert d.sharing == "file-per-process" and d.requests == 10 and d.dominant_size == 1000
    assert d.read_fraction == 0.0 and d.random_fraction == pytest.approx(0.1)
    assert d.choice == "1-DV" and d.mode == "static" and d.hints.num_dfiles == 1
    s = 1000
    alphas = 9 * ALPHA_SEQ + ALPHA_RAND
    costs = _costs(d)
    assert costs["1-DV"] == pytest.approx(10 * (E + s * V + s * BETA) + alphas)
    assert costs["1-DH"] == costs["1-DV"] and costs["2-D(g=2)"] == costs["1-DV"]
    assert "1-DH as 1-DV" in d.explanation
    assert "bulk-synchronous: p = 1" in d.assumptions[0] and "counters" in d.explanation


def test_48_ranks_per_rank_checkpoint_picks_1dv() -> None:
    # sample-goodost: 48 per-rank POSIX records in /scratch1/scratchdirs/glock, each 128 writes of
    # 8 MiB (ACCESS1 = 8388608 × 128), 127 consecutive. Counters carry no overlap, so all 48 ranks are
    # taken as concurrent: p = 48, m = 1, n = 4, file per process.
    # Per request: 1-DV  q = ⌈48/4⌉ = 12: 12e + 12sv + 12α + 12sβ;
    #              2-D(g=2)  G = 24, ⌊n/g⌋ = 2: 24e + (24s/2)v + 24α + (24s/2)β;
    #              1-DH  max(48, 4)e + (48s/4)v + 48α + (48s/4)β.
    # The byte terms are equal (12s(v + β)); only set-up differs, 12 < 24 < 48 per request → 1-DV.
    # All writes: within δ of 2-D but no replica set (replicas suit read-mostly data) → static.
    plan = plan_from_file(GOODOST, "darshan", 4)
    (d,) = plan.decisions
    assert d.target == "/scratch1/scratchdirs/glock" and d.sharing == "file-per-process"
    assert d.requests == 48 * 128 and d.dominant_size == 8 << 20
    assert d.choice == "1-DV" and d.mode == "static"
    alpha = (127 * ALPHA_SEQ + ALPHA_RAND) / 128  # mean startup per request
    costs = _costs(d)
    assert costs["2-D(g=2)"] - costs["1-DV"] == pytest.approx(48 * 128 * 12 * (E + alpha))
    assert costs["1-DH"] - costs["1-DV"] == pytest.approx(48 * 128 * 36 * (E + alpha))
    assert "bulk-synchronous: p = 48" in d.assumptions[0]


def test_vpic_shared_record_of_2048_ranks() -> None:
    # example.darshan (VPIC-IO): one *shared* record (rank −1) of vpicio.hdf5. The MPI-IO record moved
    # the data, so it is used: 16384 collective + 18 independent writes, ACCESS1 = 128 MiB × 16384;
    # POSIX_CONSEC_WRITES = 0 (strided: offsets jump ahead) → every request random.
    # p = nprocs = 2048 (shared record), n = 4: set-up counts 512 (1-DV) < 1024 (2-D g=2) < 2048 (1-DH)
    # with equal byte terms → 1-DV; a shared file, so the strip is the common request size, 128 MiB.
    log = read_darshan_counters(VPIC)
    (f,) = log.files
    assert f.module == "MPI-IO" and f.ranks is None and f.collective_writes == 16384 and f.writes == 16402
    plan = plan_from_file(VPIC, "darshan", 4, per="both")
    directory, file = plan.decisions
    assert directory.kind == "directory" and file.kind == "file" and file.target.endswith("vpicio.hdf5")
    for d in (directory, file):
        assert d.sharing == "shared" and d.random_fraction == 1.0 and d.choice == "1-DV"
        assert d.hints.strip_size == 128 << 20


def test_time_averaged_concurrency_is_reported_beside_the_assumption() -> None:
    (target,) = counter_targets(read_darshan_counters(GOODOST))
    assert any(note.startswith("timing check:") for note in target.notes)


def test_log_with_neither_dxt_nor_counters_is_one_line() -> None:
    with pytest.raises(InputError, match="no DXT trace and no POSIX or MPI-IO counters") as err:
        plan_from_file(NO_COUNTERS, "darshan", 4)
    assert str(NO_COUNTERS) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("head", "problem"), [
    (b"2.06\0\0\0\0" + b"x" * 64, "Darshan 2.06 log"),
    (b"\x1f\x8b\x08\0" + b"x" * 64, "Darshan 2.x log"),
    (b"4.00\0\0\0\0" + b"x" * 64, "Darshan 4.00 log"),
])
def test_unsupported_versions_name_the_version(tmp_path: Path, head: bytes, problem: str) -> None:
    log = tmp_path / "old.darshan"
    log.write_bytes(head)
    with pytest.raises(InputError, match=problem):
        plan_from_file(log, None, 4)


def test_cli_plans_a_counter_log(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_inproc(capsys, "plan", "--trace", str(GOODOST), "--format", "darshan", "--servers", "4", "--json")
    assert r.code == 0, r.err
    (d,) = json.loads(r.out)["decisions"]
    assert d["source"] == "darshan-counters" and d["choice"] == "1-DV" and d["assumptions"]
    text = run_inproc(capsys, "plan", "--trace", str(GOODOST), "--servers", "4")
    assert text.code == 0 and "assumption: planned from Darshan counters" in text.out


def test_cli_refuses_a_log_without_counters_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(run_inproc(capsys, "plan", "--trace", str(NO_COUNTERS), "--format", "darshan", "--servers", "4"),
                   "noposix.darshan")
