"""Prometheus metrics of the operator, served on $PFSLAYOUT_METRICS_ADDR (e.g. `0.0.0.0:9090`).

Every Kopf handler is wrapped by `instrumented(kind, handler)`, which counts calls by result, times
them and counts errors by exception type -- the same labels for every kind, so one dashboard serves
OrangeFSCluster, CostCalibration and LayoutPolicy handlers alike.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RECONCILES = Counter("pfslayout_reconcile", "Handler invocations, by result (success or error).",
                     ["kind", "handler", "result"])
ERRORS = Counter("pfslayout_reconcile_errors", "Handler failures, by exception type.",
                 ["kind", "handler", "error"])
DURATION = Histogram("pfslayout_reconcile_duration_seconds", "Handler run time in seconds.",
                     ["kind", "handler"],
                     buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
OBJECT_CHANGES = Counter("pfslayout_object_changes", "Child objects created, updated or deleted.",
                         ["kind", "object_kind", "action"])
READY_SERVERS = Gauge("pfslayout_orangefs_ready_servers", "Ready OrangeFS server pods per cluster.",
                      ["namespace", "name"])
PHASE = Gauge("pfslayout_orangefs_phase", "1 for the cluster's current phase, 0 for the others.",
              ["namespace", "name", "phase"])
PREDICTION_ERROR = Gauge("pfslayout_trace_prediction_error",
                         "The model's I/O time for a LayoutPolicy rule's requests in the last judged traced job, "
                         "relative to what the trace measured: predicted / measured - 1.",
                         ["namespace", "policy", "rule"])
RECALIBRATIONS = Counter("pfslayout_trace_recalibrations",
                         "Calibrations re-run because the prediction error stayed above spec.trace.recalibrateAbove.",
                         ["namespace", "policy"])

F = TypeVar("F", bound=Callable[..., Any])


def _observe(kind: str, handler: str, started: float, error: BaseException | None) -> None:
    DURATION.labels(kind, handler).observe(time.perf_counter() - started)
    RECONCILES.labels(kind, handler, "error" if error else "success").inc()
    if error is not None:
        ERRORS.labels(kind, handler, type(error).__name__).inc()


def instrumented(kind: str, handler: str) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as err:
                    _observe(kind, handler, started, err)
                    raise
                _observe(kind, handler, started, None)
                return result
            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            except BaseException as err:
                _observe(kind, handler, started, err)
                raise
            _observe(kind, handler, started, None)
            return result
        return run  # type: ignore[return-value]
    return wrap


def set_phase(namespace: str, name: str, phase: str, phases: tuple[str, ...]) -> None:
    for p in phases:
        PHASE.labels(namespace, name, p).set(1 if p == phase else 0)


def forget(namespace: str, name: str, phases: tuple[str, ...]) -> None:
    for p in phases:
        with contextlib.suppress(KeyError):  # never set for this phase
            PHASE.remove(namespace, name, p)
    with contextlib.suppress(KeyError):
        READY_SERVERS.remove(namespace, name)


def set_prediction(namespace: str, policy: str, rule: str, error: float) -> None:
    PREDICTION_ERROR.labels(namespace, policy, rule).set(error)


def serve(host: str, port: int) -> Any:
    """Start the /metrics HTTP server in a daemon thread (the address: settings.py's PFSLAYOUT_METRICS_ADDR);
    returns the server (`.server_address`, `.shutdown()`)."""
    server, _thread = start_http_server(port, addr=host)
    return server
