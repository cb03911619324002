"""The one hint path, as I/O: make sure directories exist on an OrangeFSCluster with their hints, through
a Job (`kinds.orangefscluster.hintjob`), and report what the file system holds afterwards.

Level-triggered and restart-safe: the Job's name is derived from the hints it applies, so a reconcile
that finds it running waits for it, one that finds it finished reads its log and verifies every hint.
The caller records the outcome and only then deletes the Job (`release`): an operator stopped in between
finds the finished Job again and reads the same outcome, so a Job never runs twice for the same hints
and what it found (drift it repaired) is never lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pfslayout.k8s.api import Kube
from pfslayout.k8s.meta import Owner, selector_string
from pfslayout.k8s.workloads import job_state, pod_failure, tail
from pfslayout.kinds.orangefscluster.hintjob import hint_job, hint_job_name
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.orangefs.dirhints import (
    DirectoryHints,
    changed,
    parse_datafiles,
    parse_report,
    verify,
    verify_datafiles,
)
from pfslayout.orangefs.relayout import (
    Migrated,
    Page,
    StaleReport,
    parse_migrated,
    parse_pages,
    parse_stale,
    unreported,
)


@dataclass(frozen=True)
class HintOutcome:
    state: str  # "created", "running", "applied" or "failed"
    job: str
    message: str = ""
    written: int = 0  # hints the Job had to write (0: everything already matched)
    datafiles: dict[str, int | None] | None = None  # checked directories: what a new file gets
    drifted: tuple[str, ...] = ()  # "<dir>: <key>" the Job found different and rewrote
    stale: dict[str, StaleReport] = field(default_factory=dict)  # scanned directories: files keeping old layouts
    migrated: dict[str, list[Migrated]] = field(default_factory=dict)  # migrate directories: what was copied
    unscanned: tuple[str, ...] = ()  # directories asked to scan that report no count (unreadable)
    pages: dict[str, Page] = field(default_factory=dict)  # scanned directories whose scan stopped at its bound


def ensure_hints(kube: Kube, cluster: OrangeFSClusterSpec, cluster_name: str, owner: Owner,
                 dirs: Sequence[DirectoryHints], labels: dict[str, str], nonce: int = 0) -> HintOutcome:
    name = hint_job_name(owner, dirs, nonce)
    job = kube.get("Job", owner.namespace, name)
    if job is None:
        # copying files takes longer than setting hints: a migrating Job gets 30 minutes
        deadline = 1800 if any(d.migrate for d in dirs) else 300
        kube.apply(hint_job(cluster, cluster_name, owner, dirs, labels, deadline_s=deadline, nonce=nonce))
        return HintOutcome("created", name, f"Job {name} sets the hints of {len(dirs)} directories")
    pods = kube.list("Pod", owner.namespace, selector_string({"job-name": name}))
    state = job_state(job)
    if state == "running":
        stuck = pod_failure(pods)
        if stuck is None:
            return HintOutcome("running", name)
        kube.delete("Job", owner.namespace, name, propagation="Background")
        return HintOutcome("failed", name, f"hint Job {name}: {stuck.message}")
    log = ""
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True):
        text = kube.pod_log(owner.namespace, pod["metadata"]["name"])
        if text:
            log = text
            break
    if state == "failed":
        return HintOutcome("failed", name, f"hint Job {name} failed: {tail(log, 8) or 'no log'}")
    report = parse_report(log)
    problems = verify(dirs, report) + verify_datafiles(dirs, log)
    if problems:
        return HintOutcome("failed", name, f"hints did not take effect: {'; '.join(problems[:5])}")
    drifted = tuple(f"{d}: {k}" for d, keys in sorted(report.items()) for k, r in sorted(keys.items())
                    if r.action == "set")
    scanned = [d.path for d in dirs if d.scan or d.migrate]
    return HintOutcome("applied", name, f"{len(dirs)} directories verified", changed(report), parse_datafiles(log),
                       drifted, parse_stale(log), parse_migrated(log), tuple(unreported(scanned, log)),
                       parse_pages(log))


def release(kube: Kube, namespace: str, outcome: HintOutcome) -> None:
    """Deletes a finished Job whose outcome the caller has recorded (a running one is left alone)."""
    if outcome.state in ("applied", "failed"):
        kube.delete("Job", namespace, outcome.job, propagation="Background")
