"""``lab hybrid`` for real (issue 13): a small run in a lab of its own — real pvfs2-servers, IOR and the
shim — skipped with `lab check`'s reason where the lab cannot run. The pure parts are in
lab/tests/unit/test_lab_hybrid.py."""


from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfstestkit import lab as labenv
from pfstestkit.lab import lab

PREFIX = "pfslabv"  # a lab of its own: not the developer's (pfslab) nor the smoke run's (pfslabt)


# ------------------------------------------------------------------------------------- the real smoke run


@pytest.fixture(scope="module")
def lab_env() -> Iterator[dict[str, str]]:
    yield from labenv.lab_env(PREFIX, "10.254.0", "pfslab-hybrid-test-")


def _sha256(env: dict[str, str], path: str, out: Path) -> str:
    """A file on the lab's OrangeFS, copied out through libpvfs2 (pvfs2-cp), hashed."""
    ofs = Path(env["ORANGEFS_PREFIX"])
    run_env = {**env, "PVFS2TAB_FILE": str(Path(env["PFSLAYOUT_LAB_DIR"]) / "pvfs2tab"),
               "LD_LIBRARY_PATH": str(ofs / "lib")}
    done = subprocess.run([str(ofs / "bin" / "pvfs2-cp"), path, str(out)], env=run_env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.timeout(600)
def test_hybrid_smoke_routes_by_phase_and_keeps_replicas_identical(lab_env: dict[str, str], tmp_path: Path) -> None:
    procs, block, small, large = 2, 1 << 20, 16 << 10, 256 << 10
    done = lab(lab_env, "up", "--servers", "2", "--rate", "400mbit")
    assert done.returncode == 0, done.stderr
    report, results_md = tmp_path / "lab-hybrid.json", tmp_path / "results.md"
    results_md.write_text("# Results\n\nkept text\n")
    done = lab(lab_env, "hybrid", "--procs", str(procs), "--block", "1M", "--small", "16K", "--large", "256K",
               "--rounds", "1", "--replicas", "1-DV,1-DH", "--report", str(report), "--results-md", str(results_md))
    assert done.returncode == 0, done.stderr
    doc = json.loads(report.read_text())
    assert doc["variants"] == ["1-DH", "1-DV", "default", "hybrid"]  # 2 servers: no 2-D
    for key in ("gain", "distance_to_oracle", "oracle", "sync_cost", "median", "setup", "routing", "realised"):
        assert key in doc, key
    assert doc["setup"]["servers"] == 2 and doc["setup"]["orangefs_version"].startswith("2.")
    # What OrangeFS made of the hints (pvfs2-viewdist): the planner's layouts, and its own default
    real = doc["realised"]
    assert real["1-DV"]["datafiles"] == 1 and real["replica 1-DV"]["datafiles"] == 1
    assert (real["1-DH"]["datafiles"], real["1-DH"]["strip"]) == (2, 8192)  # 16 KiB over 2 servers
    assert (real["replica 1-DH"]["datafiles"], real["replica 1-DH"]["strip"]) == (2, 8192)
    assert (real["default"]["datafiles"], real["default"]["strip"]) == (2, 65536)
    assert [len(r) for r in doc["placement"]["1-DV"]] == [procs]  # one round, a server list per rank file
    # pinned (the default): rank k's one-datafile file on server k mod 2, the 1-DV replica's copy too —
    # OrangeFS alone would put each on a random server
    assert doc["pinned"] is True
    servers = [labenv.server_ip(lab_env, i) for i in range(2)]
    assert real["1-DV"]["servers"] == [[servers[0]], [servers[1]]]
    assert real["replica 1-DV"]["servers"] == [[servers[0]], [servers[1]]]
    # The shim's own counters: every byte written once directly and once more to the other copy at the
    # same time (alongside: pvfs2: copies have no POSIX path, so nothing is left to replay); every read
    # phase's bytes served by the replicas, each read by one of them
    route = doc["routing"]
    w = route["write"]
    assert sum(r["write_bytes"] for r in w["replicas"]) == procs * block
    assert w["alongside_bytes"] == procs * block and w["deferred_bytes"] == 0 and w["sync_errors"] == 0
    for phase, size in (("small-random-read", small), ("large-sequential-read", large)):
        reps = route[phase]["replicas"]
        assert [r["layout"] for r in reps] == ["1-DV", "1-DH"]
        assert sum(r["read_bytes"] for r in reps) == procs * block, (phase, reps)
        assert sum(r["reads"] for r in reps) == procs * block // size, (phase, reps)
    assert doc["sync_cost"]["bytes_written"] == {"hybrid": 2 * procs * block, "static": procs * block}
    # after the close, both copies of every rank's file hold the same bytes
    for rank in range(procs):
        copies = {"1-DV": f"/pfslab/hybrid/.replica-1-DV/slot-{rank}/data.{rank:08d}",
                  "1-DH": f"/pfslab/hybrid/.replica-1-DH/data.{rank:08d}"}
        sums = {_sha256(lab_env, path, tmp_path / f"{k}-{rank}") for k, path in copies.items()}
        assert len(sums) == 1, (rank, sums)
        assert (tmp_path / f"1-DV-{rank}").stat().st_size == block
    md = results_md.read_text()
    # not the headline setup (4 servers, 200 Mbit/s, one client namespace): a section of its own, named by
    # the setup (clients in the root namespace: 0c)
    assert "kept text" in md and "<!-- lab-hybrid 2s-400mbit-0c: begin -->" in md
    assert "lab/lab hybrid --procs 2" in md
    assert "lab/lab up --servers 2 --rate 400mbit" in md
    done = lab(lab_env, "down")
    assert done.returncode == 0, done.stderr
    assert lab(lab_env, "status").stdout.startswith("lab: not up")
