"""Every container the project ran on the real node this session was hardened — read from the node
(node_audit.py: the OCI spec runc enforced, and /proc of the running process), not from the templates.

Runs after the other tests (marker `node_audit`), over the pods they made the project create: OrangeFS
servers and toolboxes, probe MPIJobs, hint and wipe Jobs, the learning collector, the operator and its
`helm test` pod, and the shim copier injected into users' MPIJobs. The rules and their exceptions, with
the reason for each, are in docs/reliability.md ("Least privilege, read from the node").
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import pytest

from pfstestkit.cluster import pod_labels
from pfstestkit.node_audit import NodeAudit, Seen, record

pytestmark = [pytest.mark.node_audit, pytest.mark.local_cluster]

PROJECT = "pfs-layout-operator"
INJECTED = "pfslayout-shim"  # the container the admission webhook adds to a user's MPIJob pods
# Capabilities the kernel numbers: CapEff is a bitmask of these.
CAP_BITS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1}
# Root with one capability, for one step each (kinds/orangefscluster/objects.py says why):
ROOT_WITH = {
    "storage-owner": ("CAP_CHOWN",),  # hands a kubelet-created, root-owned volume to the server's uid
    "wipe": ("CAP_DAC_OVERRIDE",),  # removes a hostPath server directory whose parent is root's
}
# Containers whose root file system stays writable, and why (none may be added without a reason).
WRITABLE_ROOT: dict[tuple[str, str], str] = {}


def project(audit: NodeAudit, s: Seen) -> bool:
    labels = audit.labels.get((s.namespace, s.pod)) or {}
    # the operator's children (managed-by), the chart's pods (its name; part-of on the helm test pod)
    return (s.container == INJECTED or labels.get("app.kubernetes.io/managed-by") == PROJECT
            or labels.get("app.kubernetes.io/part-of") == PROJECT or labels.get("app.kubernetes.io/name") == PROJECT)


def released(audit: NodeAudit, s: Seen) -> bool:
    """A pod of an MPIJob the previous release's operator made (the upgrade test): judged by its rules."""
    labels = audit.labels.get((s.namespace, s.pod)) or {}
    return (s.namespace, labels.get("training.kubeflow.org/job-name", "")) in audit.released_jobs


def component(audit: NodeAudit, s: Seen) -> str:
    if s.container == INJECTED:
        return "injected"
    labels = audit.labels.get((s.namespace, s.pod)) or {}
    return labels.get("app.kubernetes.io/component") or labels.get("app.kubernetes.io/name") or "?"


def violations(audit: NodeAudit, s: Seen) -> list[str]:
    out = []
    root_caps = ROOT_WITH.get(s.container)
    if s.spec_uid == 0 and root_caps is None:
        out.append("runs as root")
    if s.spec_caps != (root_caps or ()):
        out.append(f"capabilities {list(s.spec_caps)}")
    if not s.spec_no_new_privs:
        out.append("privilege escalation allowed")
    if not s.spec_seccomp:
        out.append("no seccomp filter")
    if not s.spec_root_ro and (component(audit, s), s.container) not in WRITABLE_ROOT:
        out.append("writable root file system")
    p = s.proc
    if p is not None:  # the kernel's view must be the spec's
        caps = sum(1 << CAP_BITS[c] for c in s.spec_caps if c in CAP_BITS)
        got = (p["uid"], p["no_new_privs"], p["seccomp"], p["cap_eff"], p["root_ro"])
        want = (s.spec_uid, s.spec_no_new_privs, "2" if s.spec_seccomp else "0", caps, s.spec_root_ro)
        if got != want:
            out.append(f"process {p['comm']} runs with (uid, NoNewPrivs, Seccomp, CapEff, ro /) = {got}, "
                       f"its spec says {want}")
    return out


def test_every_project_container_on_the_real_node_was_hardened(cluster: Any) -> None:
    audit = record(cluster.audit, functools.partial(pod_labels, cluster))
    if audit is None:
        pytest.skip("no real node in this cluster (kind or PFSLAYOUT_E2E_REAL_NODE=0): nothing to read")
    audit.label()
    assert not audit.errors, f"the node audit failed: {audit.errors}"
    ours = [s for s in audit.seen.values() if project(audit, s) and not released(audit, s)]
    if not ours:
        pytest.skip("no project pod ran on the real node in this session (run the whole e2e tier)")
    bad = [f"{s.namespace}/{s.pod} container {s.container}: {', '.join(v)}"
           for s in ours if (v := violations(audit, s))]
    counts = Counter(component(audit, s) for s in ours)
    running = Counter(component(audit, s) for s in ours if s.proc is not None)
    left_out = sum(1 for s in audit.seen.values() if project(audit, s) and released(audit, s))
    pods = len({(s.namespace, s.pod) for s in ours})
    summary = (f"{len(ours)} project containers (and {left_out} of the previous release's) in {pods} pods "
               f"({len(audit.seen)} containers on the node in all); by component: {dict(sorted(counts.items()))}; "
               f"read from /proc while running: {dict(sorted(running.items()))}")
    # Kept beside the cluster's state for docs/reliability.md (the next `up` clears it).
    (cluster.state_dir / "node-audit.txt").write_text(summary + "\n" + "\n".join(bad) + "\n")
    assert not bad, summary + "\n" + "\n".join(bad)
    # The kernel's side was read at all (a regression in the audit would otherwise pass on specs alone).
    assert sum(running.values()) > 0, summary
