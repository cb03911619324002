"""Kopf entry points for LayoutPolicy: decorators over `reconcilers.layoutpolicy`, a few lines each.

Every cause calls the same level-triggered reconcile; the timer picks up a finished hint Job, a
calibration that became Ready (new parameters may change a decision) and the periodic drift check
(`PFSLAYOUT_LAYOUT_RECHECK_SECONDS`, default 300).
"""

from __future__ import annotations

from typing import Any

import kopf

from pfslayout import metrics
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.reconcilers import layoutpolicy as reconciler
from pfslayout.operator.runtime import kube, post
from pfslayout.operator.settings import seconds

KIND = LP.kind
POLL_S = seconds("PFSLAYOUT_LAYOUT_POLL_SECONDS", 5)
RECHECK_S = seconds("PFSLAYOUT_LAYOUT_RECHECK_SECONDS", 300)
BACKOFF_S = seconds("PFSLAYOUT_RETRY_SECONDS", 5)


def _reconcile(body: kopf.Body, logger: Any) -> None:
    status = reconciler.reconcile(kube(), dict(body), post, RECHECK_S)
    if status:
        logger.debug(f"{status.get('appliedRules')} rules applied: {status.get('summary')}")


@kopf.on.create(LP.group, LP.version, LP.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "create")
def on_create(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.on.update(LP.group, LP.version, LP.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "update")
def on_update(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.on.resume(LP.group, LP.version, LP.plural, id="reconcile", backoff=BACKOFF_S)
@metrics.instrumented(KIND, "resume")
def on_resume(body: kopf.Body, logger: Any, **_: Any) -> None:
    _reconcile(body, logger)


@kopf.timer(LP.group, LP.version, LP.plural, id="progress", interval=POLL_S, initial_delay=POLL_S)
@metrics.instrumented(KIND, "progress")
def on_progress(body: kopf.Body, logger: Any, **_: Any) -> None:
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return
    _reconcile(body, logger)
