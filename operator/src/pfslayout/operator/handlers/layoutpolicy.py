"""Kopf entry points for LayoutPolicy: the level-triggered `reconcilers.layoutpolicy.reconcile` on create,
update, resume, and its daemon's alarm (handlers/leveltriggered.py): when its cluster or calibration
changes or a job it selects succeeds (handlers/wakeups.py), every `PFSLAYOUT_LAYOUT_POLL_SECONDS` (5)
while a Job of its own runs, and for the drift check every `PFSLAYOUT_LAYOUT_RECHECK_SECONDS`."""

from __future__ import annotations

from typing import Any

from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator.admission import upkeep
from pfslayout.operator.handlers import leveltriggered
from pfslayout.operator.reconcilers import layoutpolicy as reconciler
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.settings import Settings


def _describe(status: dict[str, Any]) -> str:
    return f"{status.get('appliedRules')} rules applied: {status.get('summary')}"


def reconcile(ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    # The policy's namespace joins the webhook's scope before the policy can report Ready.
    upkeep.include_namespace(ctx.kube, ctx.settings.webhook, body["metadata"]["namespace"])
    return reconciler.reconcile(ctx, body)


def register(s: Settings) -> None:
    # Each reconcile sets its next alarm itself (its drift check, a poll while its Job runs): the daemon's own
    # period is only a safety net, so it never fires just before the check is due.
    leveltriggered.register(LP, reconcile, s, _describe, period_s=2 * s.layout_recheck_s, driven=True)
