"""Kopf entry points for LayoutPolicy: the level-triggered `reconcilers.layoutpolicy.reconcile` on create,
update, resume, and its daemon's alarm (handlers/leveltriggered.py): when its cluster or calibration
changes or a job it selects succeeds (handlers/wakeups.py), every `PFSLAYOUT_LAYOUT_POLL_SECONDS` (5)
while a Job of its own runs, and for the drift check every `PFSLAYOUT_LAYOUT_RECHECK_SECONDS`."""

from __future__ import annotations

import copy
from typing import Any

import kopf

from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator import scope
from pfslayout.operator.admission import policy_cache, upkeep
from pfslayout.operator.handlers import leveltriggered
from pfslayout.operator.reconcilers import layoutpolicy as reconciler
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.settings import Settings


def _describe(status: dict[str, Any]) -> str:
    return f"{status.get('appliedRules')} rules applied: {status.get('summary')}"


async def on_policy_event(body: kopf.Body, type: str | None, **_: Any) -> None:
    """The admission webhook's copy of the policies (admission/policy_cache.py), kept on the event loop."""
    meta = body.get("metadata") or {}
    if type == "DELETED":
        policy_cache.POLICIES.drop(str(meta.get("namespace")), str(meta.get("name")))
    else:
        policy_cache.POLICIES.put(copy.deepcopy(dict(body)))


def reconcile(ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    # The policy's namespace joins the webhook's scope before the policy can report Ready.
    upkeep.include_namespace(ctx.kube, ctx.settings.webhook, body["metadata"]["namespace"])
    return reconciler.reconcile(ctx, body)


def register(s: Settings) -> None:
    leveltriggered.register(LP, reconcile, s, _describe, period_s=s.layout_recheck_s, driven=True)
    kopf.on.event(LP.group, LP.version, LP.plural, id="admission-copy", when=scope.in_scope)(on_policy_event)
