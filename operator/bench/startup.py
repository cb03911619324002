"""The operator's start-up cost: CPU seconds to import its entry module, measured in one run beside what it
is made of (not a test; prints figures and ratios).

    python operator/bench/startup.py [--runs 5]

Each figure is the median user+system CPU time of a fresh interpreter (its bytecode cached by a first,
unmeasured run) doing one thing:

* ``operator``   — ``import pfslayout.operator.main``: what every operator start pays before Kopf runs (the
  end-to-end tier starts local operators about 80 times per run, 50 of them in the operator-kill test);
* ``kopf``       — ``import kopf`` alone (with the kubernetes client it piggybacks on), the floor;
* ``client``     — the kubernetes client's ApiClient, which the operator uses;
* ``generated``  — the same with the client's generated CoreV1Api, AppsV1Api and BatchV1Api classes, which
  ``pfslayout.k8s.api`` no longer imports (it calls the REST paths of its seven kinds instead): the
  difference is what each operator start no longer pays.

CPU time, not wall time: the machines are shared, and the e2e lanes are CPU-bound.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

CASES = {
    "operator": "import pfslayout.operator.main",
    "kopf": "import kopf",
    "client": "from kubernetes import client; client.ApiClient",
    "generated": "from kubernetes import client; client.CoreV1Api; client.AppsV1Api; client.BatchV1Api",
    "python": "pass",
}
# The operator's settings module refuses to import without the images it defaults objects to.
ENV = {**os.environ, "PFSLAYOUT_ORANGEFS_IMAGE": "bench/orangefs:0", "PFSLAYOUT_MPI_IMAGE": "bench/mpi:0"}


def cpu_seconds(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=ENV, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    medians = {}
    for name, code in CASES.items():
        cpu_seconds(code)  # bytecode written, pages cached
        medians[name] = statistics.median(cpu_seconds(code) for _ in range(args.runs))
        print(f"{name:10s} {medians[name]:6.3f} s CPU  ({code})")
    bare = medians["python"]
    print(f"operator start over kopf's own imports: {(medians['operator'] - bare) / (medians['kopf'] - bare):.2f}x")
    avoided = medians["generated"] - medians["client"]
    print(f"the generated API classes avoided: {avoided:.3f} s CPU per start, "
          f"{avoided / (medians['operator'] - bare + avoided):.0%} of what the operator's imports would cost with them")


if __name__ == "__main__":
    main()
