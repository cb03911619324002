"""Registration of a level-triggered kind: one reconcile function, called by Kopf on create, update
(spec, labels, annotations), resume after a restart, and a timer that drives long-running work forward
(probe jobs, hint Jobs, a calibration becoming Ready) or undoes drift nobody announced.

Every kind registers through here; OrangeFSCluster adds its deletion steps and StatefulSet events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import kopf
from kubernetes.client.exceptions import ApiException

from pfslayout import metrics
from pfslayout.errors import InputError
from pfslayout.k8s.api import LogUnreadable
from pfslayout.k8s.resource import CustomResource
from pfslayout.operator import enrollment, scope
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.runtime import context, kube
from pfslayout.operator.settings import Settings

T = TypeVar("T")


def register(resource: CustomResource, step: Callable[[Context, dict[str, Any]], T], s: Settings,
             describe: Callable[[T], str], *, poll_s: float, timer: str = "progress", idle_s: float | None = None,
             log_level: int = logging.DEBUG) -> None:
    """`step(context, body)` for every cause and every `poll_s` (timer id `timer`; with `idle_s`, only
    once the object has been left alone that long); `describe(result)` is logged at `log_level`."""

    def run(body: kopf.Body, logger: Any) -> None:
        try:
            result = step(context(s), dict(body))
        except InputError as err:
            # Retrying cannot fix a bad spec; the status already names the field.
            raise kopf.PermanentError(str(err)) from err
        except LogUnreadable as err:
            # A probe's or hint Job's results are late, not lost: Kopf logs (and posts as a Warning Event)
            # one line and retries, instead of a traceback.
            raise kopf.TemporaryError(str(err), delay=s.retry_s) from None
        except ApiException as err:
            if enrollment.forbidden(err):
                raise enrollment.stalled(kube(), resource, dict(body), err) from None
            raise
        if result:
            logger.log(log_level, describe(result))

    group, version, plural = resource.group, resource.version, resource.plural
    for cause, decorator in (("create", kopf.on.create), ("update", kopf.on.update), ("resume", kopf.on.resume)):
        @decorator(group, version, plural, id="reconcile", backoff=s.retry_s, when=scope.in_scope)
        @metrics.instrumented(resource.kind, cause)
        def on_cause(body: kopf.Body, logger: Any, **_: Any) -> None:
            run(body, logger)

    # The timer's own backoff too: without one Kopf waits its default 60 s after a failed run, so a run that
    # met an API-server restart held calibration and layout progress back a minute (the API-fault e2e test's
    # operator log: "Timer 'progress' failed ... will try again in 60 seconds"; now 5).
    @kopf.timer(group, version, plural, id=timer, interval=poll_s, idle=idle_s, initial_delay=poll_s,
                backoff=s.retry_s, when=scope.in_scope)
    @metrics.instrumented(resource.kind, timer)
    def on_timer(body: kopf.Body, logger: Any, **_: Any) -> None:
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            return
        run(body, logger)
