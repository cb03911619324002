"""Injection without a webhook (suspend mode): an MPIJob created with `spec.runPolicy.suspend: true` and
selected by a LayoutPolicy in its namespace is patched with the shim (kinds/layoutpolicy/inject.py) and
resumed in one JSON Patch guarded by its resourceVersion, so the MPI Operator never starts a pod of it
without the shim. A job the injector must refuse stays suspended, annotated with the reason, with a
Warning on the job and on the policy: it never runs silently without the shim. Jobs no policy selects,
and jobs not created suspended, are not touched at all (not even annotated).
"""

from __future__ import annotations

from typing import Any

from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator.reconcilers.events import Post


def handle(kube: Kube, job: dict[str, Any], post: Post) -> str:
    """`untouched`, `injected`, `refused` or `raced` (the job changed under us; the next event retries)."""
    meta = job.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if not inject.suspended(job) or inject.INJECTED in annotations or meta.get("deletionTimestamp"):
        return "untouched"
    ns, name = meta["namespace"], meta["name"]
    policies = kube.custom.list(LP, ns)
    policy: dict[str, Any] | None = None
    try:
        policy = inject.selecting(job, policies)
        if policy is None:
            return "untouched"
        inject.check_policy(policy)
        cluster = str(((policy.get("spec") or {}).get("clusterRef") or {}).get("name"))
        replicas = inject.inject(job, policy, cluster)
    except inject.Refusal as err:
        message = str(err)
        if annotations.get(inject.REFUSED) != message[:1000]:
            kube.custom.patch(MPIJOB, ns, name, {"metadata": {"annotations": {inject.REFUSED: message[:1000]}}})
            post(job, "Warning", "InjectionRefused", f"kept suspended: {message}")
            if policy is not None:
                post(policy, "Warning", "InjectionRefused", f"MPIJob {name} kept suspended: {message}")
        return "refused"
    pname = policy["metadata"]["name"]
    ops = inject.json_patch(job, replicas, pname, resume=True)
    if inject.REFUSED in annotations:
        ops.append({"op": "remove", "path": f"/metadata/annotations/{inject.REFUSED.replace('/', '~1')}"})
    if kube.custom.patch(MPIJOB, ns, name, ops) is None:
        return "raced"
    impl = (job.get("spec") or {}).get("mpiImplementation") or "OpenMPI"
    post(job, "Normal", "ShimInjected", f"LayoutPolicy {pname}: libpfsshim.so, its config and the pvfs2tab added "
         f"to the launcher and worker templates ({impl} environment); resumed")
    post(policy, "Normal", "ShimInjected", f"MPIJob {name}")
    count = int((policy.get("status") or {}).get("injectedJobs") or 0) + 1
    kube.custom.patch_status(LP, ns, pname, {"injectedJobs": count, "lastInjectedJob": name})
    return "injected"
