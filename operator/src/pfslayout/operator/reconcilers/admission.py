"""Injection at admission (the mutating webhook on MPIJob CREATE, served by Kopf in this process): the
decision is the same as in suspend mode (kinds/layoutpolicy/inject.py `decide`), made before the object
exists, so the MPI Operator only ever sees the injected job.

* no policy selects the job: no patch at all (the stored spec is byte-identical to what was sent);
* a policy selects it: the templates and the `pfslayout.io/injected` annotation are returned as the
  patch (a job created suspended stays suspended: its resumption is its owner's business, e.g. Kueue's);
* the job must not run as it is: Refusal, which the handler turns into a denial naming the policy, the
  field and the fix.

Events (posted through the API: Kopf's poster serves only its per-object tasks) and the policy's
`injectedJobs` count are written off the request path (one background thread), so a review costs one
LIST of the namespace's LayoutPolicies; dry-run requests write nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator.reconcilers.events import Post

# One worker: the policy's count is read, incremented and written without a second writer in this process.
log = logging.getLogger("pfslayout.admission")
_after = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pfslayout-admission")


def _later(fn: Callable[..., Any], *args: Any) -> None:
    def run() -> None:
        try:
            fn(*args)
        except Exception as err:  # a lost Event or count must not go unnoticed, nor fail the admission
            log.warning(f"after admission: {getattr(fn, '__name__', fn)} failed: {err}")
    _after.submit(run)


def _count(kube: Kube, namespace: str, policy: str, job: str) -> None:
    current = kube.custom.get(LP, namespace, policy)
    if current is None:
        return
    count = int((current.get("status") or {}).get("injectedJobs") or 0) + 1
    kube.custom.patch_status(LP, namespace, policy, {"injectedJobs": count, "lastInjectedJob": job})


def review(kube: Kube, job: dict[str, Any], post: Post, dryrun: bool) -> tuple[str, dict[str, Any]] | None:
    """(policy name, new `mpiReplicaSpecs`) or None; raises inject.Refusal."""
    meta = job.get("metadata") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or meta.get("generateName") or "")
    try:
        decision = inject.decide(job, kube.custom.list(LP, ns))
    except inject.Refusal as err:
        if err.policy is not None and not dryrun:
            _later(post, err.policy, "Warning", "InjectionRefused", f"MPIJob {name} refused at admission: {err}")
        raise
    if decision is None:
        return None
    policy, replicas = decision
    pname = policy["metadata"]["name"]
    if not dryrun:
        impl = (job.get("spec") or {}).get("mpiImplementation") or "OpenMPI"
        _later(post, policy, "Normal", "ShimInjected", f"MPIJob {name} at admission ({impl} environment)")
        _later(_count, kube, ns, pname, name)
    return pname, replicas
