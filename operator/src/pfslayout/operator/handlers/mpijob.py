"""Kopf entry points for MPIJobs: the mutating webhook (admission/review.py) or, in a process that
does not serve it, the webhook-free injection of suspended jobs (admission/suspend.py).

The suspend mode uses a raw event handler, not create/update handlers: those would store Kopf's
bookkeeping annotations on every MPIJob in the cluster, and a job no policy selects must stay exactly as
its user wrote it. The admission handler's id is the webhook's URL path (`/inject`, the chart's
clientConfig); it answers only when this process serves webhooks (settings.py, startup.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator import scope
from pfslayout.operator.admission import policy_cache, review, suspend
from pfslayout.operator.runtime import kube, post, post_direct
from pfslayout.operator.settings import Settings


def on_event(body: kopf.Body, type: str | None, logger: Any, shim_image: str, **_: Any) -> None:
    if type == "DELETED":
        return
    outcome = suspend.handle(kube(), dict(body), post, shim_image)
    if outcome != "untouched":
        logger.info(f"shim injection: {outcome}")


async def on_create(body: kopf.Body, patch: kopf.Patch, dryrun: bool, logger: Any, shim_image: str,
                    **_: Any) -> None:
    # async and without I/O (policies from the in-memory copy): an admission never waits for a thread of
    # the pool the policies' timers keep busy
    job = dict(body)
    ns = str((job.get("metadata") or {}).get("namespace") or "")
    if not scope.in_scope(ns):
        return  # a namespace this operator does not serve (a fixed namespaceSelector may reach it)
    policies = policy_cache.POLICIES.in_namespace(ns)
    if policies is None:
        policies = await asyncio.to_thread(kube().custom.list, LP, ns)
    try:
        decided = review.review(kube(), job, policies, post_direct, dryrun, shim_image)
    except inject.Refusal as err:
        logger.warning(f"shim injection refused at admission: {err}")
        raise kopf.AdmissionError(str(err), code=403) from None
    if decided is None:
        return  # not selected: no patch, the job is stored exactly as sent
    policy, replicas = decided
    patch.setdefault("spec", {})["mpiReplicaSpecs"] = replicas
    patch.setdefault("metadata", {}).setdefault("annotations", {})[inject.INJECTED] = policy
    logger.info(f"shim injected at admission (LayoutPolicy {policy})")


def register(s: Settings) -> None:
    # One mode per process. With the webhook (the chart sets PFSLAYOUT_WEBHOOK_ADDR) every selected job is
    # injected at admission, suspended or not, so the operator need not watch MPIJobs at all (with thousands
    # of jobs that watch costs memory and CPU for nothing). Without it, the suspended jobs' watch events
    # drive the injection. (Kopf also refuses to start with admission handlers and no server.)
    # The shim's image for policies that name none: the operator's (Settings.mpi_image, the chart's images.mpi).
    @metrics.instrumented(MPIJOB.kind, "admission")
    async def admission(**kwargs: Any) -> None:
        await on_create(shim_image=s.mpi_image, **kwargs)

    @metrics.instrumented(MPIJOB.kind, "event")
    def event(**kwargs: Any) -> None:
        on_event(shim_image=s.mpi_image, **kwargs)

    if s.webhook is not None:
        kopf.on.mutate(MPIJOB.group, MPIJOB.version, MPIJOB.plural, id="inject", operations=["CREATE"],
                       persistent=False, side_effects=False)(admission)
    else:
        kopf.on.event(MPIJOB.group, MPIJOB.version, MPIJOB.plural, id="inject-suspended",
                      when=lambda body, namespace, **_: scope.in_scope(namespace) and bool(
                          ((body.get("spec") or {}).get("runPolicy") or {}).get("suspend")))(event)
