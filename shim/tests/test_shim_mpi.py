"""libpfsshim under real mpirun (Open MPI and MPICH, 1/2/4 ranks): transparency, hints at create, replica
sets (identical replicas, routing by the cost model, stale markers after a killed rank) and the trace."""

from __future__ import annotations

import functools
import json
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pfstestkit.shim import MpiBuild, launcher_env, pfslayout_cmd, write_config

MIB = 1 << 20
# 003 Table 3 Ethernet, with alpha_seq = alpha_rand so the expected replica does not depend on which
# requests the shim classifies as sequential.
PARAMS = {"e": 0.0003, "v": 1 / (120 * MIB), "alpha_seq": 0.0003, "alpha_rand": 0.0003, "beta": 1 / (120 * MIB)}
LAYOUTS: list[tuple[str, dict[str, Any]]] = [("1dh", {"layout": "1-DH", "strip_size": 16384, "datafiles": 4}),
                                              ("2d", {"layout": "2-D", "g": 2, "strip_size": 262144}),
                                              ("1dv", {"layout": "1-DV", "strip_size": 4 * MIB})]


def hybrid_rule(tmp: Path, logical: Path, layouts: list[tuple[str, dict[str, Any]]] = LAYOUTS) -> dict[str, Any]:
    return {"path": str(logical), "replicas": [{"dir": str(tmp / "rep" / name), **spec} for name, spec in layouts]}


def replica_paths(tmp: Path, name: str) -> list[Path]:
    return [tmp / "rep" / rep / name for rep, _ in LAYOUTS]


def stats(stats_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(stats_dir.glob("*stats.rank-*.json"))]


def run_plain(mpi: MpiBuild, tmp: Path, np: int, prog: str, *args: str) -> tuple[str, bytes]:
    plain = tmp / "plain"
    plain.mkdir(exist_ok=True)
    out = mpi.run(np, [mpi.program(prog), plain / "f.dat", *args]).stdout
    return out, (plain / "f.dat").read_bytes()


def test_open_mpi_keeps_its_session_under_this_test_process() -> None:
    """Open MPI's session directory (what OMPI_FILE_LOCATION names in each rank) is under this pytest
    process's own base (the root conftest), not the per-user /tmp directory that mpiruns of workers side
    by side race on (open-mpi/ompi#8510: "A call to mkdir was unable to create the desired directory")."""
    if shutil.which("mpirun.openmpi") is None:
        pytest.skip("mpirun.openmpi is not installed")
    done = subprocess.run(["mpirun.openmpi", "--allow-run-as-root", "-np", "1", "printenv", "OMPI_FILE_LOCATION"],
                          capture_output=True, text=True, timeout=120, env=launcher_env())
    assert done.returncode == 0, done.stderr
    base = Path(os.environ["OMPI_MCA_orte_tmpdir_base"])  # noqa: SIM112 (MCA names are lower case)
    assert base.name.startswith("pfslayout-ompi-") and base.is_dir(), base
    assert Path(done.stdout.strip()).is_relative_to(base), (done.stdout, base)


@pytest.mark.parametrize(("np", "posix", "alongside"), [(1, True, True), (2, True, True), (4, True, True),
                                                       (2, False, True), (2, False, False)])
def test_replica_set_is_transparent_and_identical(mpi: MpiBuild, tmp_path: Path, np: int, posix: bool,
                                                  alongside: bool) -> None:
    """Every data-access family on a 3-replica set: same stdout as without the shim, every replica
    byte-identical to the file written without it, no stale markers after the clean close. posix=False:
    MPI-IO only (the path for backends with no POSIX access) — independent blocking writes go to every
    copy at once (alongside), the rest are replayed; alongside=False: all replayed."""
    ref_out, ref_bytes = run_plain(mpi, tmp_path, np, "mpiio_mix")
    logical = tmp_path / "hyb"
    logical.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=4,
                       stats={"dir": str(tmp_path / "stats")}, lazy_sync={"posix": posix, "alongside": alongside})
    proc = mpi.run(np, [mpi.program("mpiio_mix"), logical / "f.dat"], mpi.shim_env(cfg))
    assert proc.stdout == ref_out
    assert "pfsshim" not in proc.stderr, proc.stderr
    assert not (logical / "f.dat").exists(), "a replica-set path is never created itself"
    for rep in replica_paths(tmp_path, "f.dat"):
        assert rep.read_bytes() == ref_bytes, f"{rep} differs from the file written without the shim"
        assert not Path(f"{rep}.pfsstale").exists()
    per_rank = stats(tmp_path / "stats")
    assert len(per_rank) == np
    for doc in per_rank:
        first = doc["files"][0]
        assert first["p"] == np and first["n"] == 4
        # 18 data writes and 14 reads per rank in mpiio_mix; each write owes the other two replicas
        assert sum(r["writes"] for r in first["replicas"]) == 18
        assert sum(r["reads"] for r in first["replicas"]) == 14
        deferred, along = first["deferred_updates"], first["alongside_writes"]
        assert deferred + along == 18 and first["sync_errors"] == 0
        assert first["applied_by_thread"] + first["applied_by_drain"] + first["coalesced"] == deferred
        if posix or not alongside:
            assert along == 0  # POSIX copies are caught up by the helper thread; alongside off: replayed
        else:
            # mpiio_mix's independent blocking writes (write, write_at) went to all three copies at once
            assert along > 0 and first["alongside_bytes"] > 0 and deferred > 0
        if not posix:
            assert first["applied_by_thread"] == 0


@pytest.mark.parametrize("np", [1, 2, 4])
def test_pass_through_is_byte_identical(mpi: MpiBuild, tmp_path: Path, np: int) -> None:
    """The shim preloaded with no config, and with a config whose rules match nothing."""
    ref_out, ref_bytes = run_plain(mpi, tmp_path, np, "mpiio_mix")
    other = tmp_path / "elsewhere"
    other.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [{"path": str(tmp_path / "ruled"), "hints": {"striping_unit": 4096}},
                                               hybrid_rule(tmp_path, tmp_path / "hybrid")],
                       params=PARAMS, servers=4)
    for env in (mpi.shim_env(), mpi.shim_env(cfg)):
        target = other / "f.dat"
        target.unlink(missing_ok=True)
        proc = mpi.run(np, [mpi.program("mpiio_mix"), target], env)
        assert proc.stdout == ref_out
        assert proc.stderr.count("pfsshim") == 0
        assert target.read_bytes() == ref_bytes
    assert not (tmp_path / "rep").exists()


def test_malformed_config_is_one_line_and_pass_through(mpi: MpiBuild, tmp_path: Path) -> None:
    ref_out, ref_bytes = run_plain(mpi, tmp_path, 2, "mpiio_mix")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pfsshim-config/1", "servers": "four"}')
    (tmp_path / "x").mkdir()
    proc = mpi.run(2, [mpi.program("mpiio_mix"), tmp_path / "x" / "f.dat"], mpi.shim_env(bad))
    lines = [ln for ln in proc.stderr.splitlines() if "pfsshim" in ln]
    assert len(lines) == 1, proc.stderr  # rank 0 only, one line
    assert "servers" in lines[0] and str(bad) in lines[0] and "pass-through" in lines[0]
    assert proc.stdout == ref_out
    assert (tmp_path / "x" / "f.dat").read_bytes() == ref_bytes


def test_hints_at_create_merge_with_user_hints(mpi: MpiBuild, tmp_path: Path) -> None:
    ruled = tmp_path / "ruled"
    ruled.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [{"path": str(ruled), "hints": {
        "striping_unit": 65536, "romio_cb_write": "enable", "cb_buffer_size": 1048576}}])

    def hints(target: Path, *user: str, env: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
        proc = mpi.run(2, [mpi.program("mpiio_hints"), target, *user], env)
        return dict(line.split("=", 1) for line in proc.stdout.split()), proc.stderr

    plain, _ = hints(tmp_path / "plain.dat")
    shimmed, err = hints(ruled / "a.dat", env=mpi.shim_env(cfg))
    assert shimmed["romio_cb_write"] == "enable" != plain["romio_cb_write"]
    assert shimmed["cb_buffer_size"] == "1048576"
    assert "pfsshim" not in err
    # the user's own hint wins, and that is said once (rank 0 only)
    mine, err = hints(ruled / "b.dat", "striping_unit=8192", env=mpi.shim_env(cfg))
    assert mine["striping_unit"] == "8192" and mine["romio_cb_write"] == "enable"
    assert err.count("own hint striping_unit wins") == 1, err
    # outside the rule: untouched
    outside, _ = hints(tmp_path / "c.dat", env=mpi.shim_env(cfg))
    assert outside == plain


@functools.cache
def expected_replica(np: int, size: int, servers: int, variant: str = "corrected") -> int:
    """Argmin over the replicas' layouts of the Python cost model (pfslayout cost), p = np, m = 1.
    Cached: both MPI flavours ask the same question, and each CLI start costs a second."""
    costs = []
    with tempfile.TemporaryDirectory(prefix="pfsshim-params-") as tmp:  # mkdtemp left one per call in /tmp
        params_file = Path(tmp) / "params.json"
        params_file.write_text(json.dumps(PARAMS))
        for _, spec in LAYOUTS:
            cmd = [*pfslayout_cmd(), "cost", "--layout", spec["layout"], "--p", str(np), "--n", str(servers),
                   "--m", "1", "--s", str(size), "--params", str(params_file), "--variant", variant, "--json"]
            if spec["layout"] == "2-D":
                cmd += ["--g", str(spec["g"])]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
            costs.append(json.loads(out)["total"])
    return min(range(len(costs)), key=lambda i: (costs[i], i))


@pytest.mark.parametrize(("np", "pattern", "variant"), [(1, "shared", "corrected"), (2, "shared", "corrected"),
                                                       (4, "shared", "corrected"), (4, "fpp", "corrected"),
                                                       (2, "shared", "printed")])
def test_routing_follows_the_cost_model(mpi: MpiBuild, tmp_path: Path, np: int, pattern: str, variant: str) -> None:
    """Small requests go where the Python model says small requests are cheapest, large ones where
    large ones are; the shim's counters show every read and write on that replica. For file per process
    (each rank opens its own file on MPI_COMM_SELF) the model's p is still the job size. The printed
    variant (selected in the config) picks another replica for 1 MiB at p = 2 than the corrected one."""
    servers = 8
    sizes = [4096, MIB]
    want = {s: expected_replica(np, s, servers, variant) for s in sizes}
    assert want[4096] != want[MIB], f"test setup: the model should prefer different replicas, got {want}"
    if variant == "printed":
        assert want[MIB] != expected_replica(np, MIB, servers, "corrected"), "test setup: variants should differ"
    extra = ["fpp"] if pattern == "fpp" else []
    names = [f"f.dat.{r}" for r in range(np)] if pattern == "fpp" else ["f.dat"]
    for size in sizes:
        case = tmp_path / str(size)
        case.mkdir()
        (case / "plain").mkdir()
        ref_out = mpi.run(np, [mpi.program("mpiio_route"), case / "plain" / "f.dat", str(size), "4", *extra]).stdout
        logical = case / "hyb"
        cfg = write_config(case / "cfg.json", [hybrid_rule(case, logical)], params=PARAMS, servers=servers,
                           ranks_per_node=1, stats={"dir": str(case / "stats")}, variant=variant)
        proc = mpi.run(np, [mpi.program("mpiio_route"), logical / "f.dat", str(size), "4", *extra],
                       mpi.shim_env(cfg))
        assert proc.stdout == ref_out
        for doc in stats(case / "stats"):
            (entry,) = doc["files"]
            assert entry["p"] == np
            reps = entry["replicas"]
            assert [r["reads"] for r in reps] == [4 if i == want[size] else 0 for i in range(3)], (size, reps)
            assert [r["writes"] for r in reps] == [4 if i == want[size] else 0 for i in range(3)], (size, reps)
        for name in names:
            ref = (case / "plain" / name).read_bytes()
            for rep in replica_paths(case, name):
                assert rep.read_bytes() == ref


@pytest.mark.parametrize("background", [False, True])
def test_reads_never_pick_a_stale_replica(mpi: MpiBuild, tmp_path: Path, background: bool) -> None:
    """Writes of one size, then unsynchronised reads of the same bytes at a size the model sends to a
    replica that still owes those writes. With the helper thread off, the owed copies are certainly not
    applied yet, so the right answer can only come from the dirty ranges steering the read."""
    np, servers = 2, 8
    small, big = expected_replica(np, 4096, servers), expected_replica(np, MIB, servers)
    assert small != big
    (tmp_path / "plain").mkdir()
    ref_out = mpi.run(np, [mpi.program("mpiio_rw"), tmp_path / "plain" / "f.dat"]).stdout
    logical = tmp_path / "hyb"
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=servers,
                       ranks_per_node=1, stats={"dir": str(tmp_path / "stats")},
                       lazy_sync={"background": background})
    proc = mpi.run(np, [mpi.program("mpiio_rw"), logical / "f.dat"], mpi.shim_env(cfg))
    assert proc.stdout == ref_out
    ref = (tmp_path / "plain" / "f.dat").read_bytes()
    assert all(rep.read_bytes() == ref for rep in replica_paths(tmp_path, "f.dat"))
    for doc in stats(tmp_path / "stats"):
        (entry,) = doc["files"]
        reps = entry["replicas"]
        assert reps[small]["writes"] == 256 and reps[big]["writes"] == 1
        if not background:
            assert entry["applied_by_thread"] == 0
            # the 1 MiB read went to the small-write replica (the only clean one); the 4 KiB reads after
            # the 1 MiB rewrite to the big-write replica
            assert reps[small]["reads"] == 1 and reps[big]["reads"] == 256, reps
            assert entry["forced_drains"] >= 1  # the 1 MiB rewrite waited for the owed 4 KiB updates


@pytest.mark.parametrize("background", [False, True])
def test_replicas_identical_at_every_sync(mpi: MpiBuild, tmp_path: Path, background: bool) -> None:
    """Compared while the file is still open, right after MPI_File_sync: with the helper thread off the
    owed updates exist only in the queue until the sync drains them."""
    logical = tmp_path / "hyb"
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=4,
                       lazy_sync={"background": background})
    reps = replica_paths(tmp_path, "f.dat")
    out = mpi.run(2, [mpi.program("mpiio_synccheck"), logical / "f.dat", "64", *reps], mpi.shim_env(cfg)).stdout
    size = 64 * 2 * 4096
    assert out.splitlines() == [f"round 1: 3 replicas identical, {size} bytes",
                                f"round 2: 3 replicas identical, {size} bytes"], out


# ---------------------------------------------------------------------------------------------- trace

HEADER = struct.Struct("<8sHHHHIIIIQQdII")
RECORD = struct.Struct("<ddQQIBBH")


def read_trace(path: Path) -> tuple[dict[str, Any], list[tuple[Any, ...]], dict[int, str]]:
    """A strict reader of docs/trace-format.md v1, independent of the package's reader."""
    data = path.read_bytes()
    (magic, version, header_size, record_size, flags, rank, comm_size, node_id, ranks_on_node, count,
     table_off, epoch, file_count, dropped) = HEADER.unpack_from(data, 0)
    assert (magic, version, header_size, record_size) == (b"PFSTRACE", 1, 64, 40)
    assert table_off == 64 + 40 * count
    records = [RECORD.unpack_from(data, 64 + 40 * i) for i in range(count)]
    files, pos = {}, table_off
    for _ in range(file_count):
        fid, n = struct.unpack_from("<II", data, pos)
        files[fid] = data[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
    assert pos == len(data), "trailing bytes after the file table"
    head = {"flags": flags, "rank": rank, "comm_size": comm_size, "node_id": node_id,
            "ranks_on_node": ranks_on_node, "epoch": epoch, "dropped": dropped}
    return head, records, files


@pytest.mark.parametrize("np", [2, 4])
def test_trace_matches_the_calls_and_reads_back(mpi: MpiBuild, tmp_path: Path, np: int) -> None:
    plain_dir, hyb_dir = tmp_path / "plain", tmp_path / "hyb"
    plain_dir.mkdir()
    hyb_dir.mkdir()
    traces = {}
    for name, rules in (("plain", []), ("hyb", [hybrid_rule(tmp_path, hyb_dir)])):
        tdir = tmp_path / f"trace-{name}"
        cfg = write_config(tmp_path / f"{name}.json", rules, params=PARAMS, servers=4,
                           trace={"enabled": True, "dir": str(tdir), "job_id": name},
                           stats={"dir": str(tmp_path / f"stats-{name}")})
        mpi.run(np, [mpi.program("mpiio_mix"), tmp_path / name / "f.dat"], mpi.shim_env(cfg))
        files = sorted(tdir.glob("*.pfstrace"))
        assert [f.name for f in files] == [f"{name}.rank-{r:06d}.pfstrace" for r in range(np)]
        traces[name] = [read_trace(f) for f in files]
    epochs = {h["epoch"] for h, _, _ in traces["hyb"]}
    assert len(epochs) == 1, "all ranks share rank 0's epoch"
    hyb_stats = stats(tmp_path / "stats-hyb")
    for rank in range(np):
        (ph, precs, pfiles), (hh, hrecs, hfiles) = traces["plain"][rank], traces["hyb"][rank]
        assert ph["rank"] == hh["rank"] == rank and ph["comm_size"] == np
        assert ph["node_id"] == 0 and ph["ranks_on_node"] == np and ph["dropped"] == 0
        assert list(pfiles.values()) == [str(plain_dir / "f.dat")]
        assert list(hfiles.values()) == [str(hyb_dir / "f.dat")], "hybrid records name the logical path"
        assert len(precs) == len(hrecs) == 32  # mpiio_mix: 18 writes + 14 reads on the first open
        assert [r[5] for r in precs].count(2) == 18 and [r[5] for r in precs].count(1) == 14
        # the same program: offsets, sizes, ops and call flags agree whether routed or not
        assert [(r[2], r[3], r[5], r[6]) for r in precs] == [(r[2], r[3], r[5], r[6] & ~8) for r in hrecs]
        assert all(r[6] & 8 and r[7] < 3 for r in hrecs) and all(r[7] == 0xFFFF and not r[6] & 8 for r in precs)
        assert all(0 <= r[0] <= r[1] for r in precs + hrecs)
        assert precs[0][2] == rank * 4096 and precs[0][6] == 4, "first call: write_at at rank*B, explicit"
        coll = [r for r in precs if r[6] & 1]
        assert len(coll) == 10  # write_at_all, write_all, iwrite_at_all, iwrite_all, 2 strided, 4 reads
        per_replica = [0, 0, 0]
        for r in hrecs:
            per_replica[r[7]] += 1
        reps = hyb_stats[rank]["files"][0]["replicas"]
        assert per_replica == [x["reads"] + x["writes"] for x in reps], "trace replica field = counters"
    # and through the product's own reader / CLI. A hang guard, not a speed check: in a fresh checkout the
    # first use compiles the trace kernels (numba, cached beside the sources), which took over 120 s on a cold
    # 2-core run with the cluster building beside it.
    proc = subprocess.run([*pfslayout_cmd(), "plan", "--format", "shim", "--trace", str(tmp_path / "trace-hyb"),
                           "--servers", "4", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert str(hyb_dir) in json.dumps(plan), plan


def test_trace_buffer_limit_counts_dropped_records(mpi: MpiBuild, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    cfg = write_config(tmp_path / "cfg.json", [], trace={"enabled": True, "dir": str(tmp_path / "t"), "max_records": 5})
    mpi.run(2, [mpi.program("mpiio_route"), tmp_path / "d" / "f.dat", "4096", "4"], mpi.shim_env(cfg))
    for rank in range(2):
        data = (tmp_path / "t" / f"run.rank-{rank:06d}.pfstrace").read_bytes()
        fields = HEADER.unpack_from(data, 0)
        flags, count, dropped = fields[4], fields[9], fields[13]
        assert (count, dropped, flags & 1) == (5, 3, 1)  # 4 writes + 4 reads, room for 5
        _head, records, files = read_trace(tmp_path / "t" / f"run.rank-{rank:06d}.pfstrace")
        assert [r[5] for r in records] == [2, 2, 2, 2, 1] and list(files.values()) == [str(tmp_path / "d" / "f.dat")]


def test_environment_moves_trace_and_stats_and_names_them_after_the_job(mpi: MpiBuild, tmp_path: Path) -> None:
    """PFSLAYOUT_SHIM_TRACE turns the trace on in a directory of its own (the config has none) and
    PFSLAYOUT_SHIM_STATS moves the stats; PFSLAYOUT_SHIM_JOB names both sets of files."""
    (tmp_path / "d").mkdir()
    cfg = write_config(tmp_path / "cfg.json", [], trace={"enabled": False})
    env = {**mpi.shim_env(cfg), "PFSLAYOUT_SHIM_TRACE": str(tmp_path / "t"),
           "PFSLAYOUT_SHIM_STATS": str(tmp_path / "s"), "PFSLAYOUT_SHIM_JOB": "job-7"}
    mpi.run(2, [mpi.program("mpiio_route"), tmp_path / "d" / "f.dat", "4096", "4"], env)
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [f"job-7.rank-{r:06d}.pfstrace" for r in range(2)]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [f"job-7.stats.rank-{r:06d}.json" for r in range(2)]
    assert [(s["rank"], s["size"]) for s in stats(tmp_path / "s")] == [(0, 2), (1, 2)]
    _head, records, files = read_trace(tmp_path / "t" / "job-7.rank-000001.pfstrace")
    assert len(records) == 8 and list(files.values()) == [str(tmp_path / "d" / "f.dat")]  # 4 writes, 4 reads


# ---------------------------------------------------------------------------------------------- crashes

@pytest.mark.parametrize("posix", [True, False], ids=["posix", "mpiio"])
def test_killed_rank_leaves_markers_then_repair(mpi: MpiBuild, tmp_path: Path, posix: bool) -> None:
    """Rank 1 is SIGKILLed after writing: the replicas it still owed updates carry a .pfsstale marker;
    the next open repairs them from the unmarked replica (which got every write) and removes them — with
    POSIX I/O, or, with lazy_sync.posix off (as for a backend reached only through MPI-IO, like ROMIO's
    pvfs2:), writing and checking the markers and copying the replica through MPI-IO."""
    ref_out, ref_bytes = run_plain(mpi, tmp_path, 2, "mpiio_mix")
    logical = tmp_path / "hyb"
    logical.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=4,
                       **({} if posix else {"lazy_sync": {"posix": False}}))
    proc = mpi.run(2, [mpi.program("mpiio_mix"), logical / "f.dat", "--crash-rank", "1"], mpi.shim_env(cfg),
                   check=False, timeout=90)
    assert proc.returncode != 0
    reps = replica_paths(tmp_path, "f.dat")
    markers = [Path(f"{r}.pfsstale") for r in reps]
    marked = [m.exists() for m in markers]
    assert marked.count(True) == 2, marked  # 4 KiB writes all go to one replica; the other two lag
    text = markers[marked.index(True)].read_text()
    assert f"logical={logical / 'f.dat'}" in text and "pfsshim stale marker v1" in text
    clean = marked.index(False)
    proc = mpi.run(2, [mpi.program("mpiio_mix"), logical / "f.dat"], mpi.shim_env(cfg))
    assert proc.stdout == ref_out
    how = "with POSIX I/O" if posix else "through MPI-IO"
    assert proc.stderr.count(f"repaired it from replica {clean} {how}") == 2, proc.stderr
    assert not any(m.exists() for m in markers)
    for rep in reps:
        assert rep.read_bytes() == ref_bytes


def test_all_replicas_marked_is_refused(mpi: MpiBuild, tmp_path: Path) -> None:
    logical = tmp_path / "hyb"
    logical.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=4)
    mpi.run(1, [mpi.program("mpiio_route"), logical / "f.dat", "4096", "2"], mpi.shim_env(cfg))
    reps = replica_paths(tmp_path, "f.dat")
    before = [r.read_bytes() for r in reps]
    for r in reps:
        Path(f"{r}.pfsstale").write_text("pfsshim stale marker v1\n")
    proc = mpi.run(2, [mpi.program("mpiio_route"), logical / "f.dat", "4096", "2"], mpi.shim_env(cfg), check=False)
    assert proc.returncode != 0
    assert "every replica has a stale marker" in proc.stderr and "refusing to open" in proc.stderr
    assert [r.read_bytes() for r in reps] == before, "a refused open touches nothing"
    assert all(Path(f"{r}.pfsstale").exists() for r in reps)


def test_unsupported_calls_are_refused_not_wrong(mpi: MpiBuild, tmp_path: Path) -> None:
    """Shared-pointer writes and split collectives on a replica set return MPI_ERR_UNSUPPORTED_OPERATION
    (the shim could not keep the copies identical); on other files they work. The rest still syncs, and
    deleting the logical path deletes the replicas."""
    plain = mpi.run(2, [mpi.program("mpiio_refused"), tmp_path / "plain.dat"])
    assert plain.stdout.strip() == "write_shared=ok split=ok"
    logical = tmp_path / "hyb"
    logical.mkdir()
    cfg = write_config(tmp_path / "cfg.json", [hybrid_rule(tmp_path, logical)], params=PARAMS, servers=4)
    proc = mpi.run(2, [mpi.program("mpiio_refused"), logical / "r.dat"], mpi.shim_env(cfg))
    assert proc.stdout.strip() == "write_shared=unsupported split=unsupported"
    assert proc.stderr.count("shared-file-pointer writes are not supported") == 1
    assert proc.stderr.count("split collectives") == 1
    copies = [r.read_bytes() for r in replica_paths(tmp_path, "r.dat")]
    assert copies[0] == copies[1] == copies[2] and copies[0][100:116] == b"shared\0\0shared\0\0"
    # MPI_File_delete of the logical path removes every replica
    mpi.run(2, [mpi.program("mpiio_refused"), logical / "r.dat", "delete"], mpi.shim_env(cfg))
    assert not any(r.exists() for r in replica_paths(tmp_path, "r.dat"))


@pytest.fixture
def full_volume(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: the 2 MiB mpiio_rw writes with two ranks cannot fit."""
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: needs root")
    root = tmp_path / "full"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(root)], check=True)
    try:
        yield root
    finally:
        # lazily: an aborted rank may still be closing its file descriptors
        subprocess.run(["umount", "--lazy", str(root)], check=True)


@pytest.mark.parametrize("configured", [False, True])
def test_a_failed_write_is_said_in_words_once(mpi: MpiBuild, full_volume: Path, tmp_path: Path,
                                              configured: bool) -> None:
    """A write past a full volume: the shim names the error class and what to do, once per rank, whether
    the file is one it tracks (a traced rule) or not. On OrangeFS this line is the job's only readable
    word on ENOSPC (MPICH prints ROMIO's pvfs2 error as "Undefined dynamic error code")."""
    cfg = (write_config(tmp_path / "cfg.json", [], trace={"enabled": True, "dir": str(tmp_path / "traces")})
           if configured else None)
    if cfg is not None:
        (tmp_path / "traces").mkdir()
    proc = mpi.run(2, [mpi.program("mpiio_rw"), full_volume / "f.dat"], mpi.shim_env(cfg), check=False)
    if mpi.flavour == "openmpi":
        # Open MPI's OMPIO prints the failed pwrite itself and returns MPI_SUCCESS: nothing for the shim to
        # see (the program's own read-back hashes are all it has). ROMIO returns the error.
        assert "No space left on device" in proc.stderr and "pfsshim" not in proc.stderr, proc.stderr
        return
    assert proc.returncode != 0, proc.stdout
    said = [ln for ln in proc.stderr.splitlines() if "pfsshim: rank" in ln and "a write" in ln]
    assert said, proc.stderr
    ranks = [int(ln.split("pfsshim: rank ")[1].split(":")[0]) for ln in said]
    assert len(ranks) == len(set(ranks)) and set(ranks) <= {0, 1}, said  # once per process
    # ROMIO's ufs driver files ENOSPC under MPI_ERR_IO and says why in the code's text (its pvfs2 driver
    # uses MPI_ERR_NO_SPACE, with no text: the e2e full-volume test reads that case).
    assert all("No space left on device" in ln and "file system" in ln for ln in said), said
