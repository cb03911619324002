"""pfsprobe's pvfs2 backend against real pvfs2-servers on loopback (marker `orangefs`).

The servers come from the operator's own rendering (`pfslayout render fs-conf --address ... --json`),
started with the loopback helpers of the operator's OrangeFS tier (e2e/testkit/pfstestkit/ofs_loopback.py):
real servers on 127.0.0.1, run as `nobody` under root, stopped by PID. Skipped, saying why, when
ORANGEFS_PREFIX is unset.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pfslayout.orangefs.commands import server_args, storage_init_script
from pfslayout.orangefs.fsconf import parse_fs_conf
from pfstestkit.ofs_loopback import OrangeFS, ServerGroup, free_ports
from pfstestkit.probe import IMPLS, Probe, build_probe, check_doc, probe_lines

pytestmark = pytest.mark.timeout(900)

MOUNT = "/mnt/pfsprobe-lb"
NSERVERS = 4


@pytest.fixture(scope="module", params=sorted(IMPLS))
def pvfs2_probe(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """pfsprobe with the pvfs2 backend, under each MPI: libpvfs2 does the I/O, MPI only coordinates."""
    impl = request.param
    prefix = os.environ.get("ORANGEFS_PREFIX")
    if not prefix:
        pytest.skip(os.environ.get("PFSLAYOUT_ORANGEFS_UNAVAILABLE")
                    or "ORANGEFS_PREFIX not set: run e2e/test-all.sh (it builds OrangeFS) to test the pvfs2 backend")
    built = Path(__file__).resolve().parents[1] / "build" / impl / "probe" / "pfsprobe"
    if built.exists():
        help_text = subprocess.run([str(built), "--help"], capture_output=True, text=True, timeout=60).stdout
        if "backends built: posix mpiio pvfs2" in help_text and built.stat().st_mtime >= max(
                p.stat().st_mtime for p in (built.parents[3] / "probe").iterdir()):
            return Probe(impl, built)
    return Probe(impl, build_probe(impl, tmp_path_factory.mktemp(f"pfsprobe-pvfs2-{impl}")))


@pytest.fixture
def filesystem(orangefs: OrangeFS, servers: ServerGroup) -> dict:
    """NSERVERS real servers from the rendered fs.conf; returns the render document plus the pvfs2tab path."""
    ports = free_ports(NSERVERS)
    args = ["--name", "probe", "--namespace", "tests", "--servers", str(NSERVERS),
            "--storage-root", str(servers.work.path / "storage"), "--mount-path", MOUNT]
    for p in ports:
        args += ["--address", f"127.0.0.1:{p}"]
    rendered = subprocess.run([sys.executable, "-c", "from pfslayout.cli import main; main()", "render", "fs-conf",
                               *args, "--json"], capture_output=True, text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    doc = json.loads(rendered.stdout)
    servers.conf.write_text(doc["fsConf"])
    tab = servers.work.path / "pvfs2tab"
    tab.write_text(doc["pvfs2tab"])
    parsed = parse_fs_conf(doc["fsConf"])
    for entry in doc["servers"]:
        opts = parsed.server_options[entry["alias"]]
        done = servers.init_storage(entry["alias"], storage_init_script(
            str(servers.conf), opts["MetadataStorageSpace"], opts["DataStorageSpace"], entry["alias"]))
        assert done.returncode == 0, done.stdout + done.stderr
    for entry, port in zip(doc["servers"], ports):
        servers.start(entry["alias"], server_args(str(servers.conf), entry["alias"]), port)
    return {"ports": ports, "pvfs2tab": str(tab), "ofs": orangefs}


def run(probe: Probe, fs: dict, nprocs: int, args: list[str]) -> subprocess.CompletedProcess[str]:
    spec = IMPLS[probe.impl]
    env = {**fs["ofs"].env(PVFS2TAB_FILE=fs["pvfs2tab"]), "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    cmd = [*spec["mpirun"], spec["np"], str(nprocs), str(probe.binary), "--backend", "pvfs2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def viewdist(fs: dict, path: str) -> tuple[list[int], str]:
    """(server ports holding the file's datafiles in order, dist_params text) from pvfs2-viewdist."""
    ofs: OrangeFS = fs["ofs"]
    done = subprocess.run([ofs.bin("pvfs2-viewdist"), "-f", path], capture_output=True, text=True, timeout=60,
                          env=ofs.env(PVFS2TAB_FILE=fs["pvfs2tab"]))
    assert done.returncode == 0, done.stdout + done.stderr
    ports = []
    for line in done.stdout.splitlines():
        if line.startswith("Datafile "):
            # "Datafile 0 - tcp://127.0.0.1:3334, handle: ..."
            url = line.split(" - ", 1)[1].split(",", 1)[0]
            ports.append(int(url.rsplit(":", 1)[1]))
    return ports, done.stdout


def test_pvfs2_backend_places_each_file_on_its_servers(pvfs2_probe: Probe, filesystem: dict) -> None:
    ports = filesystem["ports"]
    out = Path(filesystem["pvfs2tab"]).with_name("probe.json")
    s, p = 65536, 4
    targets = {"1-DV": f"{MOUNT}/probe/1-DV", "2-D:2": f"{MOUNT}/probe/2-D-g2", "1-DH": f"{MOUNT}/probe/1-DH",
               "default": f"{MOUNT}/probe/default"}
    done = run(pvfs2_probe, filesystem, p, [
        *[a for k, v in targets.items() for a in ("--target", f"{k}={v}")], "--sizes", str(s), "--procs", str(p),
        "--sharing", "file-per-process,shared", "--patterns", "sequential,random", "--requests", "4",
        "--repetitions", "2", "--verify", "--keep", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    # n comes from the file system itself when --servers is not given.
    check_doc(doc, ranks=p, backend="pvfs2", servers=NSERVERS)
    assert len(doc["cells"]) == 4 * 2 * 2 * 2
    assert {c["layout"] for c in doc["cells"]} == {"1-DV", "2-D", "1-DH", "default"}

    for i in range(p):
        # 1-DV: rank i's file on server i mod n, alone — the balanced spread the model assumes.
        got, _ = viewdist(filesystem, f"{targets['1-DV']}/pfsprobe-fpp-p{p}-s{s}-r{i}")
        assert got == [ports[i % NSERVERS]], (i, got)
        # 2-D with g=2: ⌈n/g⌉ = 2 servers, group i mod g.
        got, _ = viewdist(filesystem, f"{targets['2-D:2']}/pfsprobe-fpp-p{p}-s{s}-r{i}")
        group = i % 2
        assert got == [ports[2 * group], ports[2 * group + 1]], (i, got)
        # 1-DH: all n servers, each file starting on a different one.
        got, _ = viewdist(filesystem, f"{targets['1-DH']}/pfsprobe-fpp-p{p}-s{s}-r{i}")
        assert got == [ports[(i + j) % NSERVERS] for j in range(NSERVERS)], (i, got)
    # The baseline (no layout at create): OrangeFS's configured distribution — simple_stripe, 64 KiB strips —
    # over every server, in an order the file system chose.
    for name in [f"pfsprobe-fpp-p{p}-s{s}-r{i}" for i in range(p)] + [f"pfsprobe-shared-p{p}-s{s}"]:
        got, text = viewdist(filesystem, f"{targets['default']}/{name}")
        assert sorted(got) == sorted(ports), (name, got)
        assert "strip_size:65536" in text.replace(" ", ""), (name, text)
    # A shared file spans all servers; the strip (the planner's hints rule, place.c layout_realisation) makes a
    # request touch 1, n/g or n of them: A(s), A(g·s/n), min(A(s/n), 64 KiB) with A = round down to 4 KiB, >= 4 KiB.
    for key, strip in (("1-DV", s), ("2-D:2", s // 2), ("1-DH", s // NSERVERS)):
        got, text = viewdist(filesystem, f"{targets[key]}/pfsprobe-shared-p{p}-s{s}")
        assert got == ports, (key, got)
        assert f"strip_size:{strip}" in text.replace(" ", ""), (key, text)


def test_pvfs2_probe_fits_through_calibrate(pvfs2_probe: Probe, filesystem: dict) -> None:
    out = Path(filesystem["pvfs2tab"]).with_name("fit.json")
    done = run(pvfs2_probe, filesystem, 4, [
        "--target", f"1-DV={MOUNT}/fit/1-DV", "--target", f"2-D:2={MOUNT}/fit/2-D-g2",
        "--target", f"1-DH={MOUNT}/fit/1-DH", "--sizes", "16K,256K", "--procs", "1,2,4",
        "--patterns", "sequential,random", "--requests", "4", "--repetitions", "3", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    check_doc(doc, ranks=4, backend="pvfs2", servers=NSERVERS)
    fit = subprocess.run([str(Path(sys.executable).with_name("pfslayout")), "calibrate", "--measurements", str(out),
                          "--json"], capture_output=True, text=True, timeout=120)
    assert fit.returncode == 0, fit.stderr
    result = json.loads(fit.stdout)
    for name in ("e", "v", "alpha_seq", "alpha_rand", "beta"):
        assert math.isfinite(result[name]) and result[name] >= 0, name
    assert result["fit"]["cells"] == len(doc["cells"])
    assert result["fit"]["rank"] == len(result["fit"]["identified"]) >= 5
    assert math.isfinite(result["fit"]["r2"])


def test_pvfs2_wrong_server_count_is_bad_input(pvfs2_probe: Probe, filesystem: dict) -> None:
    done = run(pvfs2_probe, filesystem, 2, ["--target", f"1-DV={MOUNT}/bad/1-DV", "--servers", "3"])
    assert done.returncode == 2, done.stderr
    lines = probe_lines(done.stderr)
    assert len(lines) == 1 and f"servers: 3 given, but the file system has {NSERVERS} I/O servers" in lines[0]


def test_pvfs2_target_outside_the_file_system_is_bad_input(pvfs2_probe: Probe, filesystem: dict) -> None:
    done = run(pvfs2_probe, filesystem, 2, ["--target", "1-DV=/not/under/the/mount"])
    assert done.returncode == 2, done.stderr
    lines = probe_lines(done.stderr)
    assert len(lines) == 1 and "below no pvfs2tab mount point" in lines[0], done.stderr
