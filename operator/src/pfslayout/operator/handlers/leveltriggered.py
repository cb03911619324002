"""Registration of a level-triggered kind: one reconcile function, called by Kopf on create, update
(spec, labels, annotations), resume after a restart, and a timer that drives long-running work forward
(probe jobs, hint Jobs, a calibration becoming Ready) without watching every child.

CostCalibration and LayoutPolicy register through here; OrangeFSCluster has its own handlers (deletion,
the wipe Jobs, StatefulSet events).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from pfslayout import metrics
from pfslayout.k8s.api import LogUnreadable
from pfslayout.k8s.resource import CustomResource
from pfslayout.operator import enrollment, scope
from pfslayout.operator.runtime import kube


def register(resource: CustomResource, step: Callable[[dict[str, Any]], dict[str, Any]], poll_s: float,
             backoff_s: float, describe: Callable[[dict[str, Any]], str]) -> None:
    """`step(body) -> status` for every cause; `describe(status)` is logged at debug level."""

    def run(body: kopf.Body, logger: Any) -> None:
        try:
            status = step(dict(body))
        except LogUnreadable as err:
            # A probe's or hint Job's results are late, not lost: Kopf logs (and posts as a Warning Event)
            # one line and retries, instead of a traceback.
            raise kopf.TemporaryError(str(err), delay=backoff_s) from None
        except ApiException as err:
            if enrollment.forbidden(err):
                raise enrollment.stalled(kube(), resource, dict(body), err) from None
            raise
        if status:
            logger.debug(describe(status))

    group, version, plural = resource.group, resource.version, resource.plural
    for cause, decorator in (("create", kopf.on.create), ("update", kopf.on.update), ("resume", kopf.on.resume)):
        @decorator(group, version, plural, id="reconcile", backoff=backoff_s, when=scope.in_scope)
        @metrics.instrumented(resource.kind, cause)
        def on_cause(body: kopf.Body, logger: Any, **_: Any) -> None:
            run(body, logger)

    # The timer's own backoff too: without one Kopf waits its default 60 s after a failed run, so a run that
    # met an API-server restart held calibration and layout progress back a minute (the API-fault e2e test's
    # operator log: "Timer 'progress' failed ... will try again in 60 seconds"; now 5).
    @kopf.timer(group, version, plural, id="progress", interval=poll_s, initial_delay=poll_s, backoff=backoff_s,
                when=scope.in_scope)
    @metrics.instrumented(resource.kind, "progress")
    def on_progress(body: kopf.Body, logger: Any, **_: Any) -> None:
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            return
        run(body, logger)
