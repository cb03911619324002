"""Kopf entry points for MPIJobs: the mutating webhook (reconcilers/admission.py) and the webhook-free
injection of suspended jobs (reconcilers/injection.py).

The suspend mode uses a raw event handler, not create/update handlers: those would store Kopf's
bookkeeping annotations on every MPIJob in the cluster, and a job no policy selects must stay exactly as
its user wrote it. The admission handler's id is the webhook's URL path (`/inject`, the chart's
clientConfig); it answers only when this process serves webhooks (settings.py)."""

from __future__ import annotations

from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.kinds import MPIJOB
from pfslayout.kinds.layoutpolicy import inject
from pfslayout.operator.reconcilers import admission, injection
from pfslayout.operator.runtime import kube, post, post_direct


@kopf.on.event(MPIJOB.group, MPIJOB.version, MPIJOB.plural, id="inject-suspended",
               when=lambda body, **_: bool(((body.get("spec") or {}).get("runPolicy") or {}).get("suspend")))
@metrics.instrumented(MPIJOB.kind, "event")
def on_event(body: kopf.Body, type: str | None, logger: Any, **_: Any) -> None:
    if type == "DELETED":
        return
    outcome = injection.handle(kube(), dict(body), post)
    if outcome != "untouched":
        logger.info(f"shim injection: {outcome}")


@kopf.on.mutate(MPIJOB.group, MPIJOB.version, MPIJOB.plural, id="inject", operations=["CREATE"],
                persistent=False, side_effects=False)
@metrics.instrumented(MPIJOB.kind, "admission")
def on_create(body: kopf.Body, patch: kopf.Patch, dryrun: bool, logger: Any, **_: Any) -> None:
    try:
        decided = admission.review(kube(), dict(body), post_direct, dryrun)
    except inject.Refusal as err:
        logger.warning(f"shim injection refused at admission: {err}")
        raise kopf.AdmissionError(str(err), code=403) from None
    if decided is None:
        return  # not selected: no patch, the job is stored exactly as sent
    policy, replicas = decided
    patch.setdefault("spec", {})["mpiReplicaSpecs"] = replicas
    patch.setdefault("metadata", {}).setdefault("annotations", {})[inject.INJECTED] = policy
    logger.info(f"shim injected at admission (LayoutPolicy {policy})")
