"""What the cluster benchmarks share (operator/bench/injection.py, lab/bench/product_loop.py): kubectl and helm
against the running test cluster (`eval "$(e2e/harness/cluster.sh env)"`), waiting, and the chart installed
in-cluster on the real node the way the real-node e2e tests install it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pfstestkit import REPO, STATE_DIR
from pfstestkit.cluster import cluster_mode
from pfstestkit.crd_release import CHART, RELEASE, RELEASE_NS
from pfstestkit.lanes import Lane
from pfstestkit.real import operator_chart_values

__all__ = ["RELEASE", "RELEASE_NS", "REPO", "Cluster"]
# The benches install the shared release as the release lane does (it serves their pfsbench-* namespaces).
BENCH = Lane("r")


class Cluster:
    """kubectl/helm with one-line failures: ``prefix`` names the benchmark in every message."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.kubectl = os.environ.get("KUBECTL", "kubectl")
        self.helm = os.environ.get("HELM", "helm")
        state = Path(os.environ.get("PFSLAYOUT_E2E_STATE", STATE_DIR))
        self.mode = cluster_mode(state) or "local"
        self.state_dir = state

    def fail(self, message: str) -> None:
        sys.exit(f"{self.prefix}: {message}")

    def run(self, *args: str, input: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(list(args), input=input, capture_output=True, text=True, timeout=600, check=False)
        if check and proc.returncode != 0:
            self.fail(f"{' '.join(args[:4])} ... failed: {(proc.stderr or proc.stdout).strip()[:500]}")
        return proc.stdout

    def k(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return self.run(self.kubectl, "--request-timeout=60s", *args, input=input, check=check)

    def get(self, *args: str) -> dict[str, Any]:
        """``kubectl get ARGS -o json``, parsed."""
        out: dict[str, Any] = json.loads(self.k("get", *args, "-o", "json"))
        return out

    def apply(self, docs: list[dict[str, Any]], ns: str) -> None:
        self.k("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(docs))

    def wait(self, probe: Callable[[], Any], what: str, timeout: float, interval: float = 1,
             context: Callable[[], str] | None = None) -> Any:
        """``probe()``'s first truthy value; on timeout a failure naming ``what`` (and ``context()``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = probe()
            if got:
                return got
            time.sleep(interval)
        self.fail(f"timed out waiting for {what}" + (f"\n{context()}" if context else ""))

    def namespace(self, ns: str) -> None:
        """A bench namespace (pfsbench-*, served by the shared release: pfstestkit.lanes), enrolled for the
        operator like a user's."""
        self.k("create", "namespace", ns, check=False)
        self.k("create", "rolebinding", RELEASE, "-n", ns, f"--clusterrole={BENCH.namespace_role}",
               f"--serviceaccount={BENCH.service_account}", check=False)

    def install_chart(self, *values: str) -> None:
        """The chart in-cluster on the real node, rolled when the operator image was rebuilt; `values`: more
        of helm's `--set` arguments."""
        self.run(self.helm, "upgrade", "--install", RELEASE, str(CHART), "-n", RELEASE_NS, "--create-namespace",
                 *operator_chart_values(self.mode, self.state_dir), *BENCH.watch_values, *values,
                 "--wait", "--timeout", "300s")
