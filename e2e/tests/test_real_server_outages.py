"""A server lost while a client writes, on real OrangeFS server pods (issue 14 item 6; the other data-path
faults are test_real_data_faults.py).

* A server pod killed while a client writes: no write that reported success is lost or altered (read back
  byte for byte after the server is back), data written before the kill survives the server's restart,
  and a write the outage interrupted ends with the client library's error, not with success.
* Kept down past the client's retry budget (a ResourceQuota of its namespace refuses the new pod), the
  write fails with the client's error; nothing acknowledged is lost, and writes succeed once the server is
  back.

The servers keep their data in hostPath directories on their nodes; both tests run on kind's workers. The
outage is kept by the namespace's own quota, not by cordoning the server's node: a cordon held every other
lane's new pods Pending for the test's minutes (on the local cluster, whose one real node they all share,
a calibration of another lane once did not finish in 900 s beside it)."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pfstestkit.data_faults import (
    cluster_doc,
    put,
    sha256_of,
)
from pfstestkit.kinds import MOUNT
from pfstestkit.ofs_pods import pod_ready, server_pods, server_selector, sh, toolbox, wait_ofs_ready
from pfstestkit.real import place

pytestmark = pytest.mark.timeout(1500)

WRITE_MAX_S = 600  # the writer's own bound; the test stops it once it has written past the outage
OUTAGE_QUOTA = "e2e-server-outage"


# The writer logs each outcome to a file in the toolbox as well as to its output, so the test can wait on
# what it has done (a write before the kill, one after the restart) instead of on a clock: under a loaded
# CI machine `kubectl exec` alone can take seconds, and a fixed 45 s window once ended before a write
# landed on each side of the outage. It stops when the test creates the stop file (or after its bound).
WRITER = """
rm -f {log} {stop}; i=0; f=$(mktemp); head -c 1048576 /dev/urandom > $f; end=$(( $(date +%s) + {seconds} ))
while [ ! -e {stop} ] && [ $(date +%s) -lt $end ]; do
  i=$((i+1)); sum=$(sha256sum < $f | cut -d' ' -f1)
  if out=$(pvfs2-cp $f {mount}/during/$i 2>&1); then echo "OK $i $sum $(date +%s.%N)"
  else echo "FAILED $i rc=$? $(date +%s.%N) $out" | tr '\\n' ' '; echo; fi
  head -c 1048576 /dev/urandom > $f
done | tee {log}
rm -f $f
"""
WRITER_LOG, WRITER_STOP = "/tmp/writer.log", "/tmp/writer.stop"


def acknowledged(cluster: Any, ns: str, tool: str) -> list[float]:
    """The times of the writes the running writer has had acknowledged so far."""
    log = sh(cluster, ns, tool, f"cat {WRITER_LOG} 2>/dev/null || true")
    return [float(m.group(1)) for m in (re.match(r"OK \d+ \w+ ([\d.]+)", x) for x in log.splitlines()) if m]


def with_a_file(cluster: Any, namespace: str, name: str, host_root: Path) -> tuple[str, bytes]:
    """Two servers on hostPath, Ready, and a 4 MiB + 3 B file written through the toolbox: (toolbox, bytes)."""
    cluster.apply(place(cluster_doc(name, host_root, "Delete"), cluster.mode), namespace=namespace)
    wait_ofs_ready(cluster, namespace, name, 2)
    tool = toolbox(cluster, namespace, name)
    before = os.urandom(4 * 1024 * 1024 + 3)
    put(cluster, namespace, tool, "before.bin", before)
    return tool, before


def test_a_server_killed_mid_write_loses_nothing_acknowledged(cluster: Any, served: str, host_root: Path) -> None:
    namespace = served
    tool, before = with_a_file(cluster, namespace, "crash", host_root)
    sh(cluster, namespace, tool, f"pvfs2-mkdir {MOUNT}/during")

    # A client writing 1 MiB files one after another, each over both servers, while server 0 is killed.
    out: list[str] = []
    script = WRITER.format(seconds=WRITE_MAX_S, mount=MOUNT, log=WRITER_LOG, stop=WRITER_STOP)
    writer = threading.Thread(target=lambda: out.append(sh(cluster, namespace, tool, script, timeout=900)))
    writer.start()
    cluster.wait_until(lambda: len(acknowledged(cluster, namespace, tool)) >= 3, "the writer's first writes",
                       timeout=180, interval=1)
    victim = sorted(p["metadata"]["name"] for p in server_pods(cluster, namespace, "crash"))[0]
    old_uid = cluster.kubectl_json("get", "pod", victim, "-n", namespace)["metadata"]["uid"]
    killed_at, killed_wall = time.monotonic(), time.time()
    cluster.kubectl("delete", "pod", victim, "-n", namespace, "--grace-period=0", "--force", "--wait=false")

    def back() -> bool:
        pods = [p for p in server_pods(cluster, namespace, "crash") if p["metadata"]["name"] == victim]
        return bool(pods) and pods[0]["metadata"]["uid"] != old_uid and pod_ready(pods[0])
    cluster.wait_until(back, f"{victim} restarted by its StatefulSet", timeout=240, interval=1)
    restarted_after = time.monotonic() - killed_at
    back_wall = time.time()
    # Enough writes after the restart to see the writer's normal pace again, then stop it.
    cluster.wait_until(lambda: sum(t > back_wall for t in acknowledged(cluster, namespace, tool)) >= 5,
                       "writes acknowledged after the restart", timeout=300, interval=2)
    sh(cluster, namespace, tool, f"touch {WRITER_STOP}")
    writer.join(timeout=900)
    assert out, "the writer never returned"
    lines = out[0].splitlines()
    done = [(int(m.group(1)), m.group(2), float(m.group(3)))
            for m in (re.match(r"OK (\d+) (\w+) ([\d.]+)", x) for x in lines) if m]
    ok = {i: digest for i, digest, _ in done}
    failed = [x for x in lines if x.startswith("FAILED")]
    # The scenario happened: writes were acknowledged before the kill and after the server was back, and
    # (every file stripes over both servers) one waited out the outage or failed in it.
    assert any(t < killed_wall for *_, t in done) and any(t > back_wall for *_, t in done), lines
    times = sorted(t for *_, t in done)
    waited = max(b - a for a, b in itertools.pairwise(times))
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    typical = gaps[len(gaps) // 2]
    # The server answers before its pod reports Ready (readiness period): judge by the writes themselves —
    # one acknowledged after the kill must have been held up far beyond a normal write (the kill takes
    # effect some time after the delete: on the real node writes went on for a while, then one waited 76 s).
    # At 5x the typical write, not 10x: under the kind session's load a write took 1.6 s and the held one
    # 13.4 s (8.4x).
    held = max((b - a for a, b in itertools.pairwise(times) if b > killed_wall), default=0.0)
    assert failed or held >= max(1.0, 5 * typical), \
        f"no write was held up by the outage (longest gap after the kill {held:.2f} s, longest {waited:.2f} s, " \
        f"typical {typical:.3f} s):\n{lines[:20]}"

    # Written before the kill: intact after the server's restart.
    assert sha256_of(cluster, namespace, tool, "before.bin") == hashlib.sha256(before).hexdigest()
    # Every write the client library acknowledged reads back byte for byte.
    ids = " ".join(map(str, sorted(ok)))
    read = sh(cluster, namespace, tool, f"f=$(mktemp); for i in {ids}; do pvfs2-cp {MOUNT}/during/$i $f && "
                                        "echo \"$i $(sha256sum < $f | cut -d' ' -f1)\"; done; rm -f $f", timeout=600)
    got = dict(line.split() for line in read.splitlines() if len(line.split()) == 2)
    altered = [i for i, digest in ok.items() if got.get(str(i)) != digest]
    assert not altered, f"acknowledged writes that read back differently or not at all: {altered}"
    # A write the outage interrupted failed loudly: the client's error, not a success.
    for line in failed:
        assert re.search(r"rc=[1-9]", line) and re.search(r"[Ee]rror|failed|refused|timed out|I/O", line), line
    assert len(ok) + len(failed) == len(lines), lines
    print(f"server kill mid-write: {victim} back in {restarted_after:.0f} s; {len(ok)} writes acknowledged "
          f"and intact (one held up {waited:.1f} s; a write takes {typical:.3f} s), {len(failed)} failed with the "
          "client's error "
          f"({failed[0][:160] if failed else 'none: the client retried through the outage'})")


def test_a_server_kept_down_past_the_retry_budget_fails_the_write_and_loses_nothing(
        cluster: Any, served: str, host_root: Path) -> None:
    """The outage the kill above does not reach: server 0's pod deleted while a ResourceQuota holds the
    namespace at one pod fewer, so its StatefulSet cannot start a new one until the client library has given
    up (ClientRetryLimit 5 x ClientRetryDelayMilliSecs 2000 in the rendered fs.conf). The write fails with
    the client's error; nothing acknowledged is lost."""
    namespace = served
    tool, before = with_a_file(cluster, namespace, "down", host_root)
    victim = sorted(server_pods(cluster, namespace, "down"), key=lambda p: p["metadata"]["name"])[0]
    old_uid, name = victim["metadata"]["uid"], victim["metadata"]["name"]
    # Quota counts the pods not yet Succeeded or Failed: the namespace's now, less the victim.
    live = [p for p in cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
            if p["status"].get("phase") not in ("Succeeded", "Failed")]
    cluster.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": OUTAGE_QUOTA},
                   "spec": {"hard": {"pods": str(len(live) - 1)}}}, namespace=namespace)
    try:
        # Not --force: a forced delete removes the object at once while the kubelet stops the container
        # a moment later, and a write in that moment succeeded (seen once: exit=0). A graceful delete is
        # over only when the kubelet reports the server's container gone.
        cluster.kubectl("delete", "pod", name, "-n", namespace, "--grace-period=1", "--wait=true", timeout=180)
        started = time.monotonic()
        out = sh(cluster, namespace, tool, f"f=$(mktemp); head -c 1048576 /dev/urandom > $f; "
                                           f"pvfs2-cp $f {MOUNT}/during.bin 2>&1; echo exit=$?; rm -f $f", timeout=1200)
        took = time.monotonic() - started
        again = [p for p in server_pods(cluster, namespace, "down") if p["metadata"]["name"] == name]
        assert not again, f"the server came back despite the quota: {again[0]['status']}"
    finally:
        cluster.kubectl("delete", "resourcequota", OUTAGE_QUOTA, "-n", namespace, "--ignore-not-found")
        # The StatefulSet controller retried its refused create with a growing back-off (minutes by now):
        # an update of the StatefulSet queues it at once.
        cluster.kubectl("annotate", "statefulset", "-n", namespace, "-l", server_selector("down"),
                        f"e2e.pfslayout.io/outage-over={int(time.time())}", "--overwrite")
    assert "exit=0" not in out and re.search(r"exit=[1-9]", out), out
    error = next((x for x in out.splitlines() if re.search(r"[Ee]rror|failed|refused|timed out|I/O", x)), None)
    assert error, f"the write failed without saying why:\n{out}"

    def back() -> bool:
        pods = [p for p in server_pods(cluster, namespace, "down") if p["metadata"]["name"] == name]
        return bool(pods) and pods[0]["metadata"]["uid"] != old_uid and pod_ready(pods[0])
    cluster.wait_until(back, f"{name} back once the quota is gone", timeout=240, interval=1)
    assert sha256_of(cluster, namespace, tool, "before.bin") == hashlib.sha256(before).hexdigest()
    after = os.urandom(1024 * 1024)
    put(cluster, namespace, tool, "after.bin", after)
    assert sha256_of(cluster, namespace, tool, "after.bin") == hashlib.sha256(after).hexdigest()
    print(f"server kept down: the write failed after {took:.0f} s with '{error.strip()[:160]}'; "
          "data written before intact after the restart; writes succeed again")
