"""The project's test helpers, shared by the test tiers and the benchmarks: the test cluster and its
fixtures' building blocks, the operator run as a local process, real-node checks, OrangeFS servers on
loopback, the shim's MPI builds and the CLI runners. Installed into the project's virtualenv (editable),
so no test or benchmark reaches into another tree's files by path."""

import os
from pathlib import Path

# The checkout this package belongs to (the editable install resolves to it): e2e/testkit/pfstestkit/.
REPO = Path(__file__).resolve().parents[3]
# The test cluster's one entry point (docs/test-cluster.md) and the default state directory it keeps.
CLUSTER_SH = REPO / "e2e" / "harness" / "cluster.sh"
STATE_DIR = REPO / "e2e" / ".state"


def cache_root() -> Path:
    """Where the harness caches its builds (e2e/harness/cluster/lib.sh's CACHE_ROOT)."""
    return Path(os.environ.get("PFSLAYOUT_CACHE") or Path.home() / ".cache" / "pfs-layout-operator")
