"""Kopf entry points for LayoutPolicy: the level-triggered `reconcilers.layoutpolicy.reconcile` on create,
update, resume, and a timer every `PFSLAYOUT_LAYOUT_POLL_SECONDS` (5) that picks up a finished hint Job
and a calibration that became Ready (new parameters may change a decision) and runs the drift check
every `PFSLAYOUT_LAYOUT_RECHECK_SECONDS` (300)."""

from __future__ import annotations

import copy
from typing import Any

import kopf

from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator import scope
from pfslayout.operator.env import seconds
from pfslayout.operator.handlers.leveltriggered import register
from pfslayout.operator.reconcilers import admission, webhook
from pfslayout.operator.reconcilers import layoutpolicy as reconciler
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


@kopf.on.event(LP.group, LP.version, LP.plural, id="admission-copy", when=scope.in_scope)
async def on_policy_event(body: kopf.Body, type: str | None, **_: Any) -> None:
    """The admission webhook's copy of the policies (reconcilers/admission.py), kept on the event loop."""
    meta = body.get("metadata") or {}
    if type == "DELETED":
        admission.POLICIES.drop(str(meta.get("namespace")), str(meta.get("name")))
    else:
        admission.POLICIES.put(copy.deepcopy(dict(body)))
