"""The performance lab's smoke run (issue 13): `lab/lab` up → calibrate → validate → down on a small
emulated cluster — real pvfs2-servers in network namespaces behind shaped veths, real pfsprobe under
MPICH's mpiexec — plus its failure paths. The full runs are benchmarks (docs/lab.md); this checks that
every command works and that the numbers come from the shaped network, not from anywhere else.

Runs as its own lab (own name prefix, subnet and state directory), so a developer's lab on the same
machine is never touched. Skipped, with `lab check`'s reason, where the lab cannot run (not root, no
network namespaces, no OrangeFS/MPICH/pfsprobe builds).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pfstestkit import lab as labenv
from pfstestkit.lab import lab
from pfstestkit.priority import measuring

PREFIX = "pfslabt"
RATE_MBIT = 400
SERVERS = 2

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def lab_env() -> Iterator[dict[str, str]]:
    yield from labenv.lab_env(PREFIX, "10.252.0", "pfslab-test-")


@pytest.fixture(autouse=True)
def full_priority() -> Iterator[None]:
    """The smoke run checks measured link rates: at normal priority even when the test command runs this
    tier at the lowest, beside the e2e lanes (pfstestkit.priority)."""
    with measuring():
        yield


def leftovers(env: dict[str, str]) -> list[str]:
    """Everything of this test's lab on the machine: namespaces, links, server processes, state."""
    out = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    out += [f"netns {line.split()[0]}" for line in ns.splitlines() if line.startswith(f"{PREFIX}-")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    out += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
            if line.split(":")[1].strip().startswith(PREFIX)]
    state = Path(env["PFSLAYOUT_LAB_DIR"])
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"pvfs2-server" in cmd and str(state).encode() in cmd:
                out.append(f"server {proc.name}")
    if state.exists():
        out.append(f"state {state}")
    if any(str(state) in line for line in Path("/proc/mounts").read_text().splitlines()):
        out.append("storage mount")
    return out


def test_up_calibrate_validate_down(lab_env: dict[str, str], tmp_path: Path) -> None:
    # two client namespaces: two client nodes, the ranks of one launch spread over both through hydra
    done = lab(lab_env, "up", "--servers", str(SERVERS), "--rate", f"{RATE_MBIT}mbit", "--client-namespaces", "2")
    assert done.returncode == 0, done.stderr
    state = json.loads(lab(lab_env, "status").stdout)
    assert state["servers"] == SERVERS and len(state["pids"]) == SERVERS
    assert state["orangefs_version"].startswith("2.")  # what the real pvfs2-server printed
    # every server link is shaped in both directions, with the GSO size that keeps tbf cheap
    for i in range(SERVERS):
        host_side = subprocess.run(["tc", "qdisc", "show", "dev", f"{PREFIX}s{i}"], capture_output=True,
                                   text=True).stdout
        ns_side = subprocess.run(["ip", "netns", "exec", f"{PREFIX}-s{i}", "tc", "qdisc", "show", "dev", "eth0"],
                                 capture_output=True, text=True).stdout
        for side in (host_side, ns_side):
            assert f"rate {RATE_MBIT}Mbit" in side and "burst 17Kb" in side, side
        link = subprocess.run(["ip", "-d", "link", "show", f"{PREFIX}s{i}"], capture_output=True, text=True).stdout
        assert "gso_max_size 16384" in link

    done = lab(lab_env, "calibrate", "--sizes", "4K,1M", "--ranks", "2", "--min-bytes", "256K",
               "--out", str(tmp_path / "cal"))
    assert done.returncode == 0, done.stderr
    fit = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    # 4 KiB requests raised to 64 per rank (256 KiB), 1 MiB ones keep the quick profile's 8
    probed = {(c["request_size"], c["requests_per_rank"]) for doc in (tmp_path / "cal").glob("grid*.json")
              if not doc.name.endswith(".grid.json") for c in json.loads(doc.read_text())["cells"]}
    assert probed == {(4096, 64), (1 << 20, 8)}, probed
    # the fit identified every parameter from real cells (6 or 7 when writes got their own e/beta)
    assert fit["fit"]["rank"] == len(fit["fit"]["identified"]) >= 5 and fit["beta"] > 0

    report_dir, results_md = tmp_path / "report", tmp_path / "results.md"
    results_md.write_text("# Results\n\nkept text\n")
    done = lab(lab_env, "validate", "--sizes", "64K,4M", "--procs", "3", "--rounds", "2", "--requests", "4",
               "--min-bytes", "512K", "--report-dir", str(report_dir), "--results-md", str(results_md))
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "lab-validate.json").read_text())
    for key in ("cells", "decisive", "correct_decisive", "within_3pct", "mean_regret", "worst_regret", "setup"):
        assert key in report, key
    assert report["setup"]["servers"] == SERVERS and report["setup"]["rate"] == f"{RATE_MBIT}mbit"
    # 2 sizes × 1 p × 2 patterns × 2 ops, each a contest of 1-DH against 1-DV
    assert report["cells"] == 8 and report["left_out"] == 0
    # pfsprobe found two nodes: p = 3 spread over the namespaces puts 2 ranks on the busier one
    assert {(c["p"], c["m"]) for c in report["per_cell"]} == {(3, 2)}
    # 64 KiB requests raised to 8 per rank so that each rank moves the 512 KiB asked for; 4 MiB ones keep 4
    assert {(c["request_size"], c["requests_per_rank"]) for c in report["per_cell"]} == {(64 << 10, 8), (4 << 20, 4)}
    assert (report_dir / "lab-validate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = results_md.read_text()
    assert "kept text" in md and "lab/lab validate" in md
    assert f"lab/lab up --servers {SERVERS} --rate {RATE_MBIT}mbit" in md  # how the lab itself was made
    assert "lab/lab calibrate --sizes 4K,1M --ranks 2 --min-bytes 256K" in md
    # Physics only the shaped network produces: 3 ranks × 4 requests of 4 MiB cannot move faster than
    # the two server links allow (tbf's burst adds a little), and the layout that spreads each request
    # over both links (1-DH) moves at least half of that.
    link_rate = RATE_MBIT * 1e6 / 8  # bytes/s
    for cell in report["per_cell"]:
        if cell["request_size"] == 4 << 20:
            volume = 3 * 4 * (4 << 20)
            rates = {k: volume / t for k, t in cell["median"].items()}
            assert max(rates.values()) <= SERVERS * link_rate * 1.15, (cell, rates)
            assert rates["1-DH"] >= 0.5 * SERVERS * link_rate, (cell, rates)

    done = lab(lab_env, "down")
    assert done.returncode == 0, done.stderr
    assert leftovers(lab_env) == []


def test_down_leaves_nothing_after_a_crash(lab_env: dict[str, str]) -> None:
    done = lab(lab_env, "up", "--servers", "2", "--rate", "200mbit")
    assert done.returncode == 0, done.stderr
    state_path = Path(lab_env["PFSLAYOUT_LAB_DIR"]) / "state.json"
    pids = json.loads(state_path.read_text())["pids"]
    os.kill(pids[0], signal.SIGKILL)  # a server dies ...
    state_path.write_text("{ torn")  # ... and the state file is lost mid-write
    done = lab(lab_env, "down")
    assert done.returncode == 0, done.stderr
    assert leftovers(lab_env) == []
    assert "nothing was up" in lab(lab_env, "down").stdout  # idempotent


def test_bad_input_is_one_line_and_builds_nothing(lab_env: dict[str, str]) -> None:
    for args, words in ((["up", "--rate", "200"], "--rate '200': give a number with a tc unit"),
                        (["up", "--servers", "0"], "--servers 0: give at least 1 server"),
                        (["up", "--client-namespaces", "9"], "--client-namespaces 9: give 0"),
                        (["calibrate"], "no lab is up"),
                        (["validate"], "no lab is up"),
                        # an option's mistake is named before the missing lab
                        (["validate", "--min-bytes", "lots"], "--min-bytes"),
                        (["calibrate", "--min-bytes", "lots"], "--min-bytes")):
        done = lab(lab_env, *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lab: ") and words in lines[0], (args, done.stderr)
        assert leftovers(lab_env) == [], args
    done = lab(lab_env, "up", "--servers", "2", "--rate", "200mbit")
    assert done.returncode == 0, done.stderr
    again = lab(lab_env, "up", "--servers", "2", "--rate", "200mbit")
    assert again.returncode == 2 and "already up" in again.stderr and "lab down" in again.stderr
    assert lab(lab_env, "down").returncode == 0
    assert leftovers(lab_env) == []
