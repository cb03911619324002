"""Every object a namespace ever held, by name and UID: `kubectl get -w` per kind, for the fault tests
(issue 14), which require that nothing the operator makes is created twice however often it, the API
server or etcd is stopped."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

# Everything the operator (or the MPI Operator for it) creates in a namespace.
WATCHED = ("statefulsets", "deployments", "services", "configmaps", "secrets", "jobs", "persistentvolumeclaims",
           "poddisruptionbudgets", "mpijobs.kubeflow.org")


class Watches:
    """`kubectl get -w` per kind in one namespace: every (kind, name) seen, with the UIDs it had."""

    def __init__(self, cluster: Any, ns: str, outages: bool = False) -> None:
        """`outages`: the API server will go away; a watch that ends is started again (it lists what
        exists, so an object re-created meanwhile still shows a second UID). Otherwise an ended watch fails
        `stop`: it may have missed objects."""
        self.uids: dict[tuple[str, str], list[str]] = {}
        # (kind, name, uid) of objects whose pod template has the shim's init container: a launcher Job
        # the MPI Operator made before the injection is replaced; one with the shim must never be
        self.shimmed: set[tuple[str, str, str]] = set()
        self.restarts = 0
        self._cluster, self._ns, self._outages = cluster, ns, outages
        self._lock = threading.Lock()
        self._procs: dict[str, subprocess.Popen[str]] = {}
        self._stopped = threading.Event()
        self._threads = [threading.Thread(target=self._follow, args=(kind,), daemon=True) for kind in WATCHED]
        for thread in self._threads:
            thread.start()

    def _follow(self, kind: str) -> None:
        while not self._stopped.is_set():
            proc = subprocess.Popen(
                [self._cluster.kubectl_path, "--kubeconfig", str(self._cluster.kubeconfig), "get", kind, "-n",
                 self._ns, "-w", "--output-watch-events", "-o",
                 'jsonpath={.type} {.object.metadata.name} {.object.metadata.uid} '
                 '{.object.spec.template.spec.initContainers[*].name}{"\\n"}'],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            with self._lock:
                self._procs[kind] = proc
            if self._stopped.is_set():  # stopped while this one started: `stop` did not see it
                proc.kill()
            assert proc.stdout is not None
            for line in proc.stdout:
                parts = line.split()
                if len(parts) >= 3 and parts[0] in ("ADDED", "MODIFIED", "DELETED"):
                    with self._lock:
                        seen = self.uids.setdefault((kind, parts[1]), [])
                        if parts[2] not in seen:
                            seen.append(parts[2])
                        if "pfslayout-shim" in parts[3:]:
                            self.shimmed.add((kind, parts[1], parts[2]))
            proc.wait()
            if self._stopped.is_set() or not self._outages:
                return
            with self._lock:
                self.restarts += 1
            time.sleep(0.5)  # the API server is away: try again shortly

    def stop(self) -> None:
        with self._lock:
            procs = dict(self._procs)
        ended = {kind: p.poll() for kind, p in procs.items() if p.poll() is not None}
        self._stopped.set()
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=10)
        for thread in self._threads:
            thread.join(timeout=10)
        assert self._outages or not ended, f"a kubectl watch ended early: {ended}"

    def created_twice(self) -> dict[tuple[str, str], list[str]]:
        with self._lock:
            return {key: list(uids) for key, uids in self.uids.items() if len(uids) > 1}
