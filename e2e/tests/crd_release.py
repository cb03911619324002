"""The chart release whose CRDs the API-server test modules share, and a namespace to create CRs in.

Every module installs the same release the demo does, so the CRDs have one owner whichever module runs first.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "pfs-layout-operator"
RELEASE, RELEASE_NS = "pfs-layout-operator", "pfs-layout-system"
# CRD name -> short name
CRDS = {"orangefsclusters.pfslayout.io": "ofs", "costcalibrations.pfslayout.io": "cc",
        "layoutpolicies.pfslayout.io": "lp"}


def install_crds(cluster: Any) -> None:  # the `cluster` fixture of e2e/tests/conftest.py
    """The chart's CRDs, installed by the shared release, established before any manifest is sent."""
    # This checkout's chart, keeping whatever values another module installed the release with.
    cluster.helm("upgrade", "--install", "--reuse-values", RELEASE, str(CHART), "-n", RELEASE_NS,
                 "--create-namespace", "--wait", "--timeout", "180s", timeout=240)
    for name in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", timeout=90)


@contextmanager
def crd_namespace(cluster: Any, prefix: str) -> Iterator[str]:
    """A fresh namespace ``<prefix>-<random>``; on exit its CRs are deleted before the namespace."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        # Remove the test objects first, so an operator started by a later module never sees them.
        cluster.kubectl("delete", "-n", name, "orangefsclusters,costcalibrations,layoutpolicies", "--all",
                        "--timeout=60s", check=False, timeout=90)
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
