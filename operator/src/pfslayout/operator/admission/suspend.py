"""Injection without a webhook (suspend mode): an MPIJob created with `spec.runPolicy.suspend: true` and
selected by a LayoutPolicy in its namespace is patched with the shim (kinds/layoutpolicy/inject.py) and
resumed: the templates and the marker annotation in one JSON Patch guarded by its resourceVersion, the
launcher Job the MPI Operator made from the old template replaced, then `suspend: false` — so no pod of
the job starts without the shim. A job the injector must refuse stays suspended, annotated with the reason, with a
Warning on the job and on the policy: it never runs silently without the shim. Jobs no policy selects,
and jobs not created suspended, are not touched at all (not even annotated).
"""

from __future__ import annotations

import time
from typing import Any

from pfslayout import naming
from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator.shared.events import Post


def _injected(pod_template: dict[str, Any]) -> bool:
    init = (pod_template.get("spec") or {}).get("initContainers") or []
    return any(c.get("name") == naming.SHIM_COPIER for c in init)


def _replace_launcher(kube: Kube, ns: str, name: str, uid: str | None, wait_s: float = 30.0) -> None:
    """The MPI Operator creates a suspended job's launcher Job at once, from the template it has seen
    (possibly the one before the patch, from its cache), and on resume only unsuspends it: a Job's pod
    template cannot be changed. So before resuming, wait until the launcher Job carries the shim, deleting
    any made from the old template; after `wait_s` resume anyway (none exists: the MPI Operator then
    creates it from the patched job)."""
    launcher = naming.mpijob_launcher(name)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        job = kube.get("Job", ns, launcher)
        if job is not None:
            if _injected((job.get("spec") or {}).get("template") or {}):
                return
            owners = {o.get("uid") for o in (job.get("metadata") or {}).get("ownerReferences") or []}
            if uid not in owners:
                return  # not the MPI Operator's launcher of this job: leave it alone
            if not (job.get("metadata") or {}).get("deletionTimestamp"):
                kube.delete("Job", ns, launcher, propagation="Background")
        time.sleep(0.5)


RECENT_INJECTIONS = 64  # the CRD's maxItems of `status.recentInjections`
# Set with the resume, in the same patch: a job injected and suspended *without* it was interrupted before
# its resume (finish it); one with it was suspended again by its user (leave it paused).
RESUMED = "pfslayout.io/resumed"


def count_injection(kube: Kube, namespace: str, policy: str, job: str, key: str) -> None:
    """The policy's `status.injectedJobs` and `lastInjectedJob`, once per job: `key` (the job's UID) joins
    `recentInjections` in the same write, guarded by the policy's resourceVersion, so neither a restart
    that counts the job again nor two jobs counted at once (Kopf handles objects concurrently) can skew
    the count (both modes use this)."""
    for _ in range(20):
        current = kube.custom.get(LP, namespace, policy)
        if current is None:
            return
        status = current.get("status") or {}
        recent = [str(k) for k in status.get("recentInjections") or []]
        if key in recent:
            return
        change = {"injectedJobs": int(status.get("injectedJobs") or 0) + 1, "lastInjectedJob": job,
                  "recentInjections": [*recent, key][-RECENT_INJECTIONS:]}
        if kube.custom.patch_status(LP, namespace, policy, change, current["metadata"]["resourceVersion"]):
            return
    raise RuntimeError(f"LayoutPolicy {namespace}/{policy} changed 20 times while counting MPIJob {job}")


def retry_waiting(kube: Kube, namespace: str, post: Post, shim_image: str) -> int:
    """Suspended jobs kept back by a refusal are tried again (a policy that became Ready, a second policy
    that was removed): the policy's timer calls this, since nothing changes on the job itself."""
    done = 0
    # by label, so the API server filters: a namespace may hold thousands of jobs, and this runs per poll
    for job in kube.custom.list(MPIJOB, namespace, f"{inject.REFUSED}=true"):
        if inject.REFUSED in ((job.get("metadata") or {}).get("annotations") or {}):
            done += handle(kube, job, post, shim_image) == "injected"
    return done


def handle(kube: Kube, job: dict[str, Any], post: Post, shim_image: str) -> str:
    """`untouched`, `injected`, `refused` or `raced` (the job changed under us; the next event retries).
    `shim_image`: the operator's (Settings.mpi_image), for policies that name none."""
    meta = job.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if not inject.suspended(job) or meta.get("deletionTimestamp"):
        return "untouched"
    ns, name = meta["namespace"], meta["name"]
    if inject.INJECTED in annotations:
        if RESUMED in annotations:
            return "untouched"  # its user paused it again: not ours to resume
        # Injected but still suspended: the operator stopped between the patch and the resume (a kill, a
        # lost connection). Finish what it started; the count is keyed, so it is not counted twice.
        if not all(_injected((spec or {}).get("template") or {}) for spec in
                   ((job.get("spec") or {}).get("mpiReplicaSpecs") or {}).values()):
            return "untouched"  # annotated by someone else, templates without the shim: not ours to resume
        return _resume(kube, job, str(annotations[inject.INJECTED]), post, finished=True)
    try:
        decision = inject.decide(job, kube.custom.list(LP, ns), shim_image)
    except inject.Refusal as err:
        message = str(err)
        if annotations.get(inject.REFUSED) != message[:1000]:
            kube.custom.patch(MPIJOB, ns, name, {"metadata": {"annotations": {inject.REFUSED: message[:1000]},
                                                              "labels": {inject.REFUSED: "true"}}})
            post(job, "Warning", "InjectionRefused", f"kept suspended: {message}")
            if err.policy is not None:
                post(err.policy, "Warning", "InjectionRefused", f"MPIJob {name} kept suspended: {message}")
        return "refused"
    if decision is None:
        return "untouched"
    policy, replicas = decision
    pname = policy["metadata"]["name"]
    ops = inject.json_patch(job, replicas, pname, resume=False)
    if inject.REFUSED in annotations:
        ops.append({"op": "remove", "path": f"/metadata/annotations/{inject.REFUSED.replace('/', '~1')}"})
    if inject.REFUSED in (meta.get("labels") or {}):
        ops.append({"op": "remove", "path": f"/metadata/labels/{inject.REFUSED.replace('/', '~1')}"})
    if kube.custom.patch(MPIJOB, ns, name, ops) is None:
        return "raced"
    return _resume(kube, job, pname, post, finished=False)


def _resume(kube: Kube, job: dict[str, Any], pname: str, post: Post, finished: bool) -> str:
    """After the shim patch: the launcher replaced, the job counted, then resumed — in this order, so an
    operator stopped at any step finds the job still suspended and annotated, and `handle` ends it here."""
    meta = job["metadata"]
    ns, name = meta["namespace"], meta["name"]
    _replace_launcher(kube, ns, name, meta.get("uid"))
    count_injection(kube, ns, pname, name, str(meta.get("uid") or name))
    if kube.custom.patch(MPIJOB, ns, name, {"metadata": {"annotations": {RESUMED: "true"}},
                                            "spec": {"runPolicy": {"suspend": False}}}) is None:
        return "raced"
    impl = (job.get("spec") or {}).get("mpiImplementation") or "OpenMPI"
    again = " (the injection an earlier operator process began, finished)" if finished else ""
    post(job, "Normal", "ShimInjected", f"LayoutPolicy {pname}: libpfsshim.so, its config and the pvfs2tab added "
         f"to the launcher and worker templates ({impl} environment); resumed{again}")
    policy = kube.custom.get(LP, ns, pname)
    if policy is not None:
        post(policy, "Normal", "ShimInjected", f"MPIJob {name}")
    return "injected"
