"""Kopf entry points for LayoutPolicy: the level-triggered `reconcilers.layoutpolicy.reconcile` on create,
update, resume, and a timer every `PFSLAYOUT_LAYOUT_POLL_SECONDS` (5) that picks up a finished hint Job
and a calibration that became Ready (new parameters may change a decision) and runs the drift check
every `PFSLAYOUT_LAYOUT_RECHECK_SECONDS` (300)."""

from __future__ import annotations

from typing import Any

from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.env import seconds
from pfslayout.operator.handlers.leveltriggered import register
from pfslayout.operator.reconcilers import layoutpolicy as reconciler
from pfslayout.operator.reconcilers import webhook
from pfslayout.operator.runtime import kube, post

POLL_S = seconds("PFSLAYOUT_LAYOUT_POLL_SECONDS", 5)
RECHECK_S = seconds("PFSLAYOUT_LAYOUT_RECHECK_SECONDS", 300)
BACKOFF_S = seconds("PFSLAYOUT_RETRY_SECONDS", 5)


def _describe(status: dict[str, Any]) -> str:
    return f"{status.get('appliedRules')} rules applied: {status.get('summary')}"


WEBHOOK = webhook.settings_from_env()


def _reconcile(body: dict[str, Any]) -> dict[str, Any]:
    # The policy's namespace joins the webhook's scope before the policy can report Ready.
    webhook.include_namespace(kube(), WEBHOOK, body["metadata"]["namespace"])
    return reconciler.reconcile(kube(), body, post, RECHECK_S)


register(LP, _reconcile, POLL_S, BACKOFF_S, _describe)
