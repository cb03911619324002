"""The data path under faults, on real OrangeFS server pods (issue 14 item 6); a server killed or kept
down while a client writes is test_real_server_outages.py (a lane of its own: the two take 5 minutes).

* `reclaimPolicy: Retain`: a cluster deleted and created again with the same name finds its data — every
  byte (sha256), the directory layout hints, the file system ID — in the host directories it kept.
* A rank SIGKILLed mid-write on a hybrid replica set (an injected MPIJob, IOR through ROMIO's `pvfs2:`
  driver): the lagging replica carries a stale marker, and the next job to open the file copies the clean
  replica over it through MPI-IO before anything is read — both replicas byte-identical (sha256) and
  equal to the clean one; with every replica marked the open is refused and nothing changes.

* A full server volume (a tmpfs under the servers' hostPath): an MPIJob writing past it fails, its log
  saying so in words (the injected shim's line), and nothing else breaks — the servers stay Ready
  without a restart, data stored before reads back byte for byte, and once the volume has room the same
  servers take writes again. (Unpatched OrangeFS 2.10 acknowledged such
  writes and read back holes: the build patches it, docs/reliability.md "A full server volume".)

The hostPath tests read the servers' directories on the real node, this machine on the local cluster:
they are marked `local_cluster`. The replica-set test runs on kind's workers too."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pfstestkit.crd_release import empty_namespace
from pfstestkit.data_faults import (
    cluster_doc,
    delete_cluster,
    put,
    sha256_of,
)
from pfstestkit.kinds import MOUNT, OFS
from pfstestkit.mpijobs import finished, launcher_log, mpijob
from pfstestkit.ofs_pods import pod_ready, server_pods, sh, toolbox, wait_ofs_ready
from pfstestkit.real import assert_real_pods, place

pytestmark = pytest.mark.timeout(1500)


@pytest.mark.local_cluster
def test_retain_keeps_every_byte_through_delete_and_recreate(cluster: Any, served: str, host_root: Path) -> None:
    namespace = served
    doc = place(cluster_doc("keep", host_root, "Retain"), cluster.mode)
    cluster.apply(doc, namespace=namespace)
    first = wait_ofs_ready(cluster, namespace, "keep", 2)
    assert_real_pods(cluster, server_pods(cluster, namespace, "keep"))
    tool = toolbox(cluster, namespace, "keep")
    files = {f"kept/{i}.bin": os.urandom(n) for i, n in enumerate((1, 65536, 3 * 1024 * 1024 + 17))}
    sh(cluster, namespace, tool, f"set -e; pvfs2-mkdir {MOUNT}/kept; "
                                 f"pvfs2-xattr -s -k user.pvfs2.num_dfiles -v 1 {MOUNT}/kept")
    for path, data in files.items():
        put(cluster, namespace, tool, path, data)
    server_dirs = [host_root / p["metadata"]["name"] for p in server_pods(cluster, namespace, "keep")]

    delete_cluster(cluster, namespace, "keep")
    # Retain: the operator left the servers' directories, with what they stored, on the node.
    kept_bytes = sum(f.stat().st_size for d in server_dirs for f in d.rglob("*") if f.is_file())
    assert all(d.is_dir() for d in server_dirs) and kept_bytes >= sum(map(len, files.values())), \
        (server_dirs, kept_bytes)

    cluster.apply(doc, namespace=namespace)
    second = wait_ofs_ready(cluster, namespace, "keep", 2)
    tool = toolbox(cluster, namespace, "keep")
    assert second["metadata"]["uid"] != first["metadata"]["uid"]  # really a new object
    assert second["status"]["fsId"] == first["status"]["fsId"], (first["status"], second["status"])
    for path, data in files.items():
        assert sha256_of(cluster, namespace, tool, path) == hashlib.sha256(data).hexdigest(), path
    hint = sh(cluster, namespace, tool, f"pvfs2-xattr -t -k user.pvfs2.num_dfiles {MOUNT}/kept")
    assert re.search(r'user\.pvfs2\.num_dfiles"\s+Value : "1"', hint), hint
    print(f"Retain round trip: {len(files)} files, {sum(map(len, files.values())):,} bytes, "
          f"{kept_bytes:,} bytes kept on the node, fsId {second['status']['fsId']}, checksums equal")

    # Clean up as a user would: switch to Delete, then delete (the operator wipes the directories).
    cluster.kubectl("patch", OFS, "keep", "-n", namespace, "--type=merge", "-p", '{"spec":{"reclaimPolicy":"Delete"}}')
    delete_cluster(cluster, namespace, "keep")
    cluster.wait_until(lambda: not any(d.exists() for d in server_dirs), "the operator to wipe the directories",
                       timeout=120, interval=1)


# IOR writes one shared file here: declared so, the 2-D copy stripes over every server (a per-process
# rule would pin its files into slot directories, docs/shim-config.md "slots")
HYBRID = {"path": "/hy", "mode": "hybrid", "fileSharing": "shared", "hybrid": {"replicas": [
    {"name": "wide", "layout": "1-DH", "stripSize": 65536},
    {"name": "grouped", "layout": "2-D", "groups": 2, "stripSize": 1048576}]}}
REPLICAS = (f"{MOUNT}/hy/.replica-wide/crash.dat", f"{MOUNT}/hy/.replica-grouped/crash.dat")
# Rank 3 SIGKILLs itself mid-write of a shared file in 4 KiB requests (~5 s here): once the first stale
# marker shows that the write is under way and one replica lags, plus a second — progress, not a clock
# (CI's first run of this test started the write after rank 3's old 2-s timer had already fired, and no
# replica lagged yet). Small writes all go to one replica, the other lags (the shim's routing,
# docs/shim.md). The shell's pid is IOR's after exec; `$$$$` because Kubernetes turns `$$` in a command
# into `$`; the marker wait gives up after 120 s and kills anyway (the test then names the missing marker).
# The killer keeps none of the rank's output pipes and each `pvfs2-ls` is bounded to 10 s: Hydra's proxy
# takes a rank for ended once its output is closed too, so a killer (or a `pvfs2-ls` stuck on a loaded
# server) holding them could keep the job running after the kill — the suspected cause of a `crash` job
# that ran 10 minutes with two lanes side by side (2026-11-28; its pods' processes were not kept then).
REPLICA_DIRS = f"{MOUNT}/hy/.replica-wide {MOUNT}/hy/.replica-grouped"
CRASH = ("mpiexec -n 4 sh -c 'if [ \"$PMI_RANK\" = 3 ]; then "
         "(timeout 120 sh -c \"until timeout 10 /opt/orangefs/bin/pvfs2-ls " + REPLICA_DIRS + " 2>/dev/null "
         "| grep -q pfsstale; do sleep 0.2; done\"; sleep 1; kill -9 $$$$) </dev/null >/dev/null 2>&1 & fi; "
         f"exec ior -a MPIIO -o {MOUNT}/hy/crash.dat -t 4k -b 32m -w -k'")
REOPEN = f"mpiexec -n 4 ior -a MPIIO -o {MOUNT}/hy/crash.dat -t 1m -b 32m -r -k || true"


def listing(cluster: Any, ns: str, tool: str) -> str:
    return sh(cluster, ns, tool, f"pvfs2-ls {REPLICA_DIRS}")


def test_a_rank_killed_mid_write_on_a_replica_set_is_repaired_never_divergent(cluster: Any, served: str) -> None:
    namespace = served
    fs = cluster_doc("hybrid", Path("/unused"), "Delete")
    fs["spec"]["servers"]["count"] = 4
    fs["spec"]["storage"] = {"type": "emptyDir", "size": "2Gi"}
    cluster.apply(place(fs, cluster.mode), namespace=namespace)
    cluster.apply({"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "crash"},
                   "spec": {"clusterRef": {"name": "hybrid"}, "selector": {"matchLabels": {"app": "crash"}},
                            "shim": {"routePaths": True}, "rules": [HYBRID]}}, namespace=namespace)
    wait_ofs_ready(cluster, namespace, "hybrid", 4)
    tool = toolbox(cluster, namespace, "hybrid")

    cluster.apply(place(mpijob("crash", CRASH, {"app": "crash"}, suspend=True), cluster.mode), namespace=namespace)
    state, log = finished(cluster, namespace, "crash", timeout=600), launcher_log(cluster, namespace, "crash")
    killed = re.search(r"BAD TERMINATION.*\n.*\n=   EXIT CODE: 9|KILLED BY SIGNAL: 9", log)
    assert state == "Failed" and killed, f"{state}\n{log[-3000:]}"
    before = listing(cluster, namespace, tool)
    markers = before.count("crash.dat.pfsstale")
    assert markers >= 1, f"no replica marked stale after a rank died mid-write:\n{before}\n{log[-2000:]}"
    sums = [sha256_of(cluster, namespace, tool, r.removeprefix(f"{MOUNT}/")) for r in REPLICAS]

    # The next job to open the file: rank 0 copies the clean replica over the marked one, then runs — or,
    # with every replica marked (no copy known complete), refuses the open and changes nothing.
    cluster.apply(place(mpijob("reopen", REOPEN, {"app": "crash"}, suspend=True), cluster.mode),
                  namespace=namespace)
    finished(cluster, namespace, "reopen", timeout=600)
    log = launcher_log(cluster, namespace, "reopen")
    after = [sha256_of(cluster, namespace, tool, r.removeprefix(f"{MOUNT}/")) for r in REPLICAS]
    if markers == len(REPLICAS):
        assert "every replica has a stale marker" in log and "refusing to open" in log, log[-3000:]
        assert after == sums and listing(cluster, namespace, tool).count("crash.dat.pfsstale") == markers
        outcome = "every replica marked: the next open refused, nothing changed"
    else:
        repaired = re.search(r"replica (\d) \(\S+\) had a stale marker .*repaired it from replica (\d) through MPI-IO",
                             log)
        assert repaired, log[-3000:]
        assert after[0] == after[1], f"replicas differ after the repair: {after}"
        assert after[0] == sums[int(repaired.group(2))], "the repair copied something other than the clean replica"
        assert "pfsstale" not in listing(cluster, namespace, tool)
        outcome = (f"replica {repaired.group(1)} marked ({'differing' if sums[0] != sums[1] else 'equal'} before), "
                   f"repaired from replica {repaired.group(2)} through MPI-IO; both sha256 {after[0][:16]}")
    print(f"rank killed on a replica set: {outcome}")


FULL_MIB = 96  # the tmpfs both servers' storage shares; the job below writes 2 x 64 MiB into it
# `pvfs2:` names ROMIO's driver: the pods mount nothing, so without it ROMIO would take the path as local.
FILL = f"mpiexec -n 2 ior -a MPIIO -o pvfs2:{MOUNT}/fill/job.dat -t 1m -b 64m -w -k"


@pytest.fixture
def small_volume(cluster: Any, served: str, host_root: Path) -> Iterator[Path]:
    """host_root on a FULL_MIB tmpfs, unmounted once the test's clusters (and their pods) are gone."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FULL_MIB}m,mode=0755", "tmpfs", str(host_root)],
                   check=True)
    try:
        yield host_root
    finally:
        empty_namespace(cluster, served)
        subprocess.run(["umount", str(host_root)], check=True)


def restarts(cluster: Any, ns: str, name: str) -> dict[str, int]:
    return {p["metadata"]["name"]: sum(c.get("restartCount", 0) for c in p["status"].get("containerStatuses") or [])
            for p in server_pods(cluster, ns, name)}


@pytest.mark.local_cluster
def test_a_full_server_volume_fails_the_job_with_enospc_and_breaks_nothing(
        cluster: Any, served: str, small_volume: Path) -> None:
    namespace = served
    cluster.apply(place(cluster_doc("full", small_volume, "Delete"), cluster.mode), namespace=namespace)
    # The policy only selects the job, so that the operator injects the client (pvfs2tab) into it.
    cluster.apply({"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "fill"},
                   "spec": {"clusterRef": {"name": "full"}, "selector": {"matchLabels": {"app": "fill"}},
                            "rules": [{"path": "/fill", "mode": "explicit", "explicit": {"layout": "1-DH"}}]}},
                  namespace=namespace)
    wait_ofs_ready(cluster, namespace, "full", 2)
    assert_real_pods(cluster, server_pods(cluster, namespace, "full"))
    tool = toolbox(cluster, namespace, "full")
    before = os.urandom(3 * 1024 * 1024 + 5)
    put(cluster, namespace, tool, "before.bin", before)
    restarted = restarts(cluster, namespace, "full")

    cluster.apply(place(mpijob("fill", FILL, {"app": "fill"}, suspend=True), cluster.mode), namespace=namespace)
    state, log = finished(cluster, namespace, "fill", timeout=600), launcher_log(cluster, namespace, "fill")
    # ROMIO's pvfs2 driver makes the servers' ENOSPC into MPI_ERR_NO_SPACE, whose text MPICH cannot look up
    # (IOR prints "MPI Undefined dynamic error code"): the injected shim's line is what says it in words.
    enospc = re.search(r"pfsshim: rank \d+: a write .*: no space left on the file system[^\n]*", log)
    assert state == "Failed" and enospc, f"{state}\n{log[-3000:]}"
    used = shutil.disk_usage(small_volume)
    assert used.free < 16 * 1024 * 1024, f"the job failed before the volume was full: {used}"

    # Nothing else broken: no server restarted, both Ready, stored data intact.
    assert restarts(cluster, namespace, "full") == restarted
    assert all(pod_ready(p) for p in server_pods(cluster, namespace, "full"))
    assert sha256_of(cluster, namespace, tool, "before.bin") == hashlib.sha256(before).hexdigest()
    # A second writer on the still-full volume: the toolbox's pvfs2-cp, 16 MiB in its default 10 MiB
    # requests striped over both servers, twice. Each must fail at once with ENOSPC and exit: before the
    # build's OrangeFS patch 0002 the client's next request after such a failed write (pvfs2-cp's setattr)
    # could wait forever behind the write's unread data (docs/reliability.md, "A full server volume").
    for attempt in ("still-full-1.bin", "still-full-2.bin"):
        started = time.monotonic()
        out = sh(cluster, namespace, tool, f"f=$(mktemp); head -c 16777216 /dev/urandom > $f; "
                 f"timeout 120 pvfs2-cp $f {MOUNT}/{attempt} 2>&1; echo rc=$?; rm -f $f", timeout=180)
        took = time.monotonic() - started
        assert "No space left on device" in out and "rc=0" not in out and "rc=124" not in out, out
        assert took < 60, f"pvfs2-cp on the full volume took {took:.0f} s to fail:\n{out}"

    # Room again (the volume grown, as an admin would: the OrangeFS tools have no rm): the same servers,
    # never restarted, take a write that reads back byte for byte.
    subprocess.run(["mount", "-o", f"remount,size={2 * FULL_MIB}m", str(small_volume)], check=True)
    after = os.urandom(16 * 1024 * 1024)
    put(cluster, namespace, tool, "after.bin", after)
    assert sha256_of(cluster, namespace, tool, "after.bin") == hashlib.sha256(after).hexdigest()
    assert restarts(cluster, namespace, "full") == restarted
    print(f"full volume: the job failed with '{enospc.group(0)}' ({used.free:,} bytes free of {FULL_MIB} MiB); "
          "servers never restarted; stored data intact; "
          f"16 MiB written and read back once the volume grew")
