"""Injection at admission (the mutating webhook on MPIJob CREATE, served by Kopf in this process): the
decision is the same as in suspend mode (kinds/layoutpolicy/inject.py `decide`), made before the object
exists, so the MPI Operator only ever sees the injected job.

* no policy selects the job: no patch at all (the stored spec is byte-identical to what was sent);
* a policy selects it: the templates and the `pfslayout.io/injected` annotation are returned as the
  patch (a job created suspended stays suspended: its resumption is its owner's business, e.g. Kueue's);
* the job must not run as it is: Refusal, which the handler turns into a denial naming the policy, the
  field and the fix.

A review makes no API call: the LayoutPolicies come from `POLICIES`, an in-memory copy seeded by a LIST
at start-up (before the webhook listens and before Kopf watches), kept current by the LayoutPolicy watch
events (handlers/layoutpolicy.py) and checked against a fresh LIST at every webhook upkeep (a policy
deleted while a watch was down would otherwise linger). Events (posted through the API: Kopf's poster
serves only its per-object tasks) and the policy's `injectedJobs` count are written off the request path
(one background thread); dry-run requests write nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pfslayout.k8s.api import Kube
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator.admission import suspend
from pfslayout.operator.shared.events import Post

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


def review(kube: Kube, job: dict[str, Any], policies: list[dict[str, Any]], post: Post, dryrun: bool,
           shim_image: str) -> tuple[str, dict[str, Any]] | None:
    """(policy name, new `mpiReplicaSpecs`) or None; raises inject.Refusal. `policies`: the job's namespace's;
    `shim_image`: the operator's (Settings.mpi_image), for policies that name none."""
    meta = job.get("metadata") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or meta.get("generateName") or "")
    try:
        decision = inject.decide(job, policies, shim_image)
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
        # Counted once, here: no UID is assigned before admission and nothing retries this count, so
        # the key only has to be unique (a job re-created under the same name counts again).
        _later(suspend.count_injection, kube, ns, pname, name, f"admission-{uuid.uuid4()}")
    return pname, replicas
