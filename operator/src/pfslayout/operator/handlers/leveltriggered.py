"""Registration of a level-triggered kind: one reconcile function, called by Kopf on create, update
(spec, labels, annotations) and resume after a restart, and then either

* `register` with `timer`: a Kopf timer every `period_s` (OrangeFSCluster's resync, which undoes drift
  nobody announced once the object has been left alone), or
* `register` with `driven=True`: a Kopf daemon per object that reconciles when its alarm rings
  (shared/wakeups.py) — at the end of `period_s` (the drift check), when something it depends on changes
  (handlers/wakeups.py), or `Context.requeue` seconds after a reconcile that waits on work in flight.
  LayoutPolicy and CostCalibration register so: an idle one makes no API request between periods.

Every kind registers through here; OrangeFSCluster adds its deletion steps and StatefulSet events.
"""

from __future__ import annotations

import asyncio
import dataclasses
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
from pfslayout.operator.shared.wakeups import WAKEUPS, Key

T = TypeVar("T")


def key_of(resource: CustomResource, body: Any) -> Key:
    meta = body.get("metadata") or {}
    return (resource.plural, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def register(resource: CustomResource, step: Callable[[Context, dict[str, Any]], T], s: Settings,
             describe: Callable[[T], str], *, period_s: float, timer: str = "progress", idle_s: float | None = None,
             driven: bool = False, log_level: int = logging.DEBUG) -> None:
    """`step(context, body)` for every cause, then every `period_s` (timer id `timer`; with `idle_s`, only
    once the object has been left alone that long) or, `driven`, when its alarm rings;
    `describe(result)` is logged at `log_level`."""

    def run(body: dict[str, Any], logger: Any) -> None:
        # The requeue a reconcile asks for lands on the object's alarm (a no-op when it has no daemon).
        key = key_of(resource, body)
        ctx = dataclasses.replace(context(s), requeue=lambda seconds: WAKEUPS.after(key, seconds))
        try:
            result = step(ctx, body)
        except InputError as err:
            # Retrying cannot fix a bad spec; the status already names the field.
            raise kopf.PermanentError(str(err)) from err
        except LogUnreadable as err:
            # A probe's or hint Job's results are late, not lost: Kopf logs (and posts as a Warning Event)
            # one line and retries, instead of a traceback.
            raise kopf.TemporaryError(str(err), delay=s.retry_s) from None
        except ApiException as err:
            if enrollment.forbidden(err):
                raise enrollment.stalled(kube(), resource, body, err) from None
            raise
        if result:
            logger.log(log_level, describe(result))

    group, version, plural = resource.group, resource.version, resource.plural
    for cause, decorator in (("create", kopf.on.create), ("update", kopf.on.update), ("resume", kopf.on.resume)):
        @decorator(group, version, plural, id="reconcile", backoff=s.retry_s, when=scope.in_scope)
        @metrics.instrumented(resource.kind, cause)
        def on_cause(body: kopf.Body, logger: Any, **_: Any) -> None:
            run(dict(body), logger)

    if driven:
        _register_daemon(resource, run, s, period_s, timer)
        return

    # The timer's own backoff too: without one Kopf waits its default 60 s after a failed run, so a run that
    # met an API-server restart held calibration and layout progress back a minute (the API-fault e2e test's
    # operator log: "Timer 'progress' failed ... will try again in 60 seconds"; now 5).
    @kopf.timer(group, version, plural, id=timer, interval=period_s, idle=idle_s, initial_delay=period_s,
                backoff=s.retry_s, when=scope.in_scope)
    @metrics.instrumented(resource.kind, timer)
    def on_timer(body: kopf.Body, logger: Any, **_: Any) -> None:
        if (body.get("metadata") or {}).get("deletionTimestamp"):
            return
        run(dict(body), logger)


async def _until_stopped(stopped: kopf.DaemonStopped) -> None:
    await stopped.wait()


def _register_daemon(resource: CustomResource, run: Callable[[dict[str, Any], Any], None], s: Settings,
                     period_s: float, name: str) -> None:
    instrumented = metrics.instrumented(resource.kind, name)(run)

    async def alarm_clock(body: kopf.Body, logger: Any, stopped: kopf.DaemonStopped, **_: Any) -> None:
        """Sleeps until the object's alarm rings, reconciles (in Kopf's thread pool, like a handler), sets the
        next alarm one period ahead; a failed reconcile is retried after PFSLAYOUT_RETRY_SECONDS."""
        key = key_of(resource, body)
        # A daemon also starts when a standby replica takes over (peering), where no create or resume handler
        # runs: its object may have work in flight, so the first alarm is seconds away, not a period.
        alarm = WAKEUPS.attach(key, body, min(period_s, s.retry_s))
        stop = asyncio.ensure_future(_until_stopped(stopped))
        try:
            while not stopped:
                wait = alarm.due - WAKEUPS.clock()
                if wait > 0:
                    alarm.event.clear()
                    ring = asyncio.ensure_future(alarm.event.wait())
                    await asyncio.wait({ring, stop}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                    ring.cancel()
                    continue
                if (body.get("metadata") or {}).get("deletionTimestamp"):
                    return
                alarm.due = WAKEUPS.clock() + period_s
                try:
                    await asyncio.to_thread(instrumented, dict(body), logger)
                except kopf.PermanentError as err:  # `run` turns a bad spec (InputError) into this
                    logger.error(f"{resource.kind} not reconciled: {err}")  # a spec change brings the next call
                except kopf.TemporaryError as err:
                    logger.warning(str(err))
                    alarm.due = min(alarm.due, WAKEUPS.clock() + (err.delay or s.retry_s))
                except Exception as err:  # an API hiccup: logged, retried soon, never the daemon's end
                    logger.exception(f"{resource.kind} reconcile failed ({type(err).__name__}); retrying in "
                                     f"{s.retry_s:.0f} s")
                    alarm.due = min(alarm.due, WAKEUPS.clock() + s.retry_s)
        finally:
            stop.cancel()
            WAKEUPS.detach(key, alarm)

    kopf.daemon(resource.group, resource.version, resource.plural, id=name, when=scope.in_scope, backoff=s.retry_s,
                cancellation_timeout=5.0)(alarm_clock)
