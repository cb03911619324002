"""Kopf settings and start-up: watch timeouts, pfslayout.io persistence keys, Events, metrics.

Run as `kopf run --standalone --all-namespaces --liveness=http://0.0.0.0:8080/healthz -m pfslayout.operator`
(the chart's Deployment) with PFSLAYOUT_METRICS_ADDR=0.0.0.0:9090 and PFSLAYOUT_WATCH_NAMESPACES naming
the namespaces it serves (scope.py).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.k8s.api import load_config
from pfslayout.operator import finalizer, scope
from pfslayout.operator.env import seconds
from pfslayout.operator.reconcilers import webhook
from pfslayout.operator.runtime import kube

PREFIX = "pfslayout.io"
# Kopf's bookkeeping annotations live in their own subdomain: Kopf drops every annotation under its
# storage prefix from the diff it reacts to, and users' `pfslayout.io/...` annotations (e.g. the
# scale-down consent) must count as changes.
STORAGE_PREFIX = f"operator.{PREFIX}"


def configure(settings: kopf.OperatorSettings) -> None:
    """Pure-ish: only mutates the settings object, so a unit test can check every value."""
    # Kopf's default watch never times out: a silently dropped connection would stall the operator
    # forever. The server ends each watch after server_timeout; the client gives up slightly later.
    # Whole seconds: it becomes the watch's `timeoutSeconds`, which the API server parses as an integer
    # (a "20.0" there is a 400 on every watch: the operator would see nothing at all).
    settings.watching.server_timeout = math.ceil(seconds("PFSLAYOUT_WATCH_SERVER_TIMEOUT", 120))
    settings.watching.client_timeout = seconds("PFSLAYOUT_WATCH_CLIENT_TIMEOUT",
                                                settings.watching.server_timeout + 30)
    settings.watching.connect_timeout = seconds("PFSLAYOUT_WATCH_CONNECT_TIMEOUT", 10)
    settings.networking.request_timeout = seconds("PFSLAYOUT_REQUEST_TIMEOUT", 60)
    # Named after the served namespaces: operators of other scopes never remove it (operator/finalizer.py).
    settings.persistence.finalizer = finalizer.name(scope.current())
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=STORAGE_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=STORAGE_PREFIX, key="last-handled-configuration")
    settings.posting.enabled = True
    settings.posting.level = logging.INFO
    settings.posting.reporting_component = "pfs-layout-operator"
    # Events without a reporting instance are rejected (422) by the events API.
    settings.posting.reporting_instance = os.environ.get("POD_NAME") or socket.gethostname() or "pfs-layout-operator"
    settings.posting.event_name_prefix = "pfslayout-"
    settings.execution.max_workers = 8


def serve_webhook(settings: kopf.OperatorSettings, logger: Any) -> None:
    """When the chart enabled the webhook: TLS and the configuration in order first (a failure stops the
    operator with the reason), then Kopf's server on the given address, and the periodic upkeep."""
    s = webhook.settings_from_env()
    if s is None:
        logger.info("PFSLAYOUT_WEBHOOK_ADDR unset: no admission webhook (suspend-mode injection only)")
        return
    webhook.upkeep(kube(), s)
    # Kopf does not manage the configuration (the chart owns it; webhook.py keeps its bundle and scope):
    # it only serves `/<handler id>` and restarts its listener when the certificate files change.
    settings.admission.managed = None
    settings.admission.server = kopf.WebhookServer(addr=s.host, port=s.port, certfile=str(s.certfile),
                                                   pkeyfile=str(s.keyfile), file_check_interval=5)
    stop = threading.Event()
    threading.Thread(target=webhook.run_forever, args=(kube(), s, stop), name="pfslayout-webhook-upkeep",
                     daemon=True).start()
    logger.info(f"admission webhook on https://{s.host}:{s.port}/inject (certificates: {s.certs}, "
                f"namespaces: {s.scope})")


@kopf.on.startup()
def startup(settings: kopf.OperatorSettings, logger: Any, **_: Any) -> None:
    configure(settings)
    served = scope.current()  # a malformed list stops the operator here, with the field named
    logger.info("serving namespaces: " + (", ".join(served) if served else "all"))
    load_config()
    serve_webhook(settings, logger)
    addr = os.environ.get("PFSLAYOUT_METRICS_ADDR")
    if addr:
        host, port = metrics.serve(addr).server_address[:2]
        logger.info(f"metrics on http://{host}:{port}/metrics")
    else:
        logger.info("PFSLAYOUT_METRICS_ADDR unset: metrics not served")


@kopf.on.probe(id="reconciles")
def probe_reconciles(**_: Any) -> float:
    """Shown by the liveness endpoint: total handler runs so far (a moving number means progress)."""
    return sum(sample.value for family in metrics.RECONCILES.collect() for sample in family.samples
               if sample.name.endswith("_total"))
