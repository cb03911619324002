"""The operator's start-up: Kopf's settings, the admission webhook's server and upkeep, metrics, and the
liveness probe's progress figure. Registered by the entry module (main.py) with the process's settings.

Run as `kopf run --peering=<release> --all-namespaces --liveness=http://0.0.0.0:8080/healthz -m
pfslayout.operator.main` (the chart's Deployment; a single local process may use `--standalone`) with
PFSLAYOUT_METRICS_ADDR=0.0.0.0:9090 and PFSLAYOUT_WATCH_NAMESPACES naming the namespaces it serves
(scope.py).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.k8s.api import load_config
from pfslayout.operator import finalizer, peering, scope
from pfslayout.operator.admission import policy_cache, policy_watch, upkeep
from pfslayout.operator.handlers import wakeups
from pfslayout.operator.runtime import kube
from pfslayout.operator.settings import Settings, configure

STARTED_NS = time.time_ns()  # imported by the entry module as the process starts: its peering priority


def serve_webhook(kopf_settings: kopf.OperatorSettings, s: Settings, logger: Any) -> None:
    """When the chart enabled the webhook: TLS and the configuration in order first (a failure stops the
    operator with the reason), then Kopf's server on the given address, and the periodic upkeep."""
    w = s.webhook
    if w is None:
        logger.info("PFSLAYOUT_WEBHOOK_ADDR unset: no admission webhook (suspend-mode injection only)")
        return
    upkeep.upkeep(kube(), w)
    # Kopf does not manage the configuration (the chart owns it; admission/upkeep.py keeps its bundle and
    # scope): it only serves `/<handler id>` and restarts its listener when the certificate files change.
    kopf_settings.admission.managed = None
    kopf_settings.admission.server = kopf.WebhookServer(addr=w.host, port=w.port, certfile=str(w.certfile),
                                                        pkeyfile=str(w.keyfile), file_check_interval=5)
    stop = threading.Event()
    threading.Thread(target=upkeep.run_forever, args=(kube(), w, stop), name="pfslayout-webhook-upkeep",
                     daemon=True).start()
    # Its own watch, not Kopf's: a standby replica's Kopf is paused, and it serves admissions all the same.
    policy_watch.start(kube(), policy_cache.POLICIES, scope.in_scope, int(s.watch_server_timeout), s.retry_s)
    logger.info(f"admission webhook on https://{w.host}:{w.port}/inject (certificates: {w.certs}, "
                f"namespaces: {w.scope})")


def start(kopf_settings: kopf.OperatorSettings, s: Settings, logger: Any) -> None:
    configure(kopf_settings, s, finalizer.name(s.watch_namespaces), STARTED_NS)
    served = s.watch_namespaces
    logger.info("serving namespaces: " + (", ".join(served) if served else "all"))
    load_config()
    p = kopf_settings.peering
    if p.mandatory and not p.standalone:
        made = peering.ensure(kube(), p.name)
        logger.info(f"peering through ClusterKopfPeering {p.name}{' (created)' if made else ''}: priority "
                    f"{p.priority} (the oldest replica leads), lifetime {p.lifetime} s")
    serve_webhook(kopf_settings, s, logger)
    if wakeups.own_mpijob_watch(s):
        wakeups.start_mpijob_watch(kube(), s)
    if s.metrics_addr:
        host, port = metrics.serve(*s.metrics_addr).server_address[:2]
        logger.info(f"metrics on http://{host}:{port}/metrics")
    else:
        logger.info("PFSLAYOUT_METRICS_ADDR unset: metrics not served")


def reconciles() -> float:
    """Shown by the liveness endpoint: total handler runs so far (a moving number means progress)."""
    return sum(sample.value for family in metrics.RECONCILES.collect() for sample in family.samples
               if sample.name.endswith("_total"))


def register(s: Settings) -> None:
    def startup(settings: kopf.OperatorSettings, logger: Any, **_: Any) -> None:
        start(settings, s, logger)

    kopf.on.startup(id="startup")(startup)
    kopf.on.probe(id="reconciles")(lambda **_: reconciles())
