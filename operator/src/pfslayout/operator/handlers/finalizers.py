"""Taking over the finalizers earlier pfs-layout operators left on the objects this one serves
(operator/finalizer.py): on every event of a served object, in the same patch Kopf writes.

Each object is taken over at most ADOPTIONS times per process (an event already on its way may still
show the old finalizer once): a foreign finalizer that keeps coming back means a second operator serves
the namespace too (two releases whose `watchNamespaces` overlap), and fighting it would be an endless
loop of patches — a Warning Event names it instead, once.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any

import kopf

from pfslayout.kinds import COST_CALIBRATION, LAYOUT_POLICY, ORANGEFS_CLUSTER
from pfslayout.operator import finalizer, scope, settings
from pfslayout.operator.runtime import post
from pfslayout.operator.settings import Settings

ADOPTIONS = 3
WARNED = -1
# Per UID: how often this process took the object over, or WARNED; bounded, oldest forgotten first.
_SEEN: OrderedDict[str, int] = OrderedDict()
_SEEN_MAX = 4096


def _remember(uid: str, what: int) -> None:
    _SEEN[uid] = what
    _SEEN.move_to_end(uid)
    while len(_SEEN) > _SEEN_MAX:
        _SEEN.popitem(last=False)


def _set_finalizers(body: dict[str, Any], finalizers: list[str]) -> None:
    body.setdefault("metadata", {})["finalizers"] = finalizers


def take_over(body: kopf.Body, patch: kopf.Patch, logger: Any, **_: Any) -> None:
    meta = body.get("metadata") or {}
    current = list(meta.get("finalizers") or [])
    mine = finalizer.name(settings.current().watch_namespaces)
    others = finalizer.foreign(current, mine)
    uid = str(meta.get("uid") or "")
    done = _SEEN.get(uid, 0)
    if not others or done == WARNED:
        return
    deleting = bool(meta.get("deletionTimestamp"))
    change = finalizer.adopted(current, mine, deleting)
    if change is not None and done < ADOPTIONS:
        patch.fns.append(functools.partial(_set_finalizers, finalizers=change))
        logger.info(f"finalizer {', '.join(others)} of an earlier operator taken over as {mine}")
        _remember(uid, done + 1)
        return
    if change is None:  # being deleted, never served by this operator: the finalizer is not ours to lift
        message = (f"being deleted with the finalizer {', '.join(others)} of an earlier pfs-layout operator, which "
                   f"this one ({mine}) cannot take over any more: run that operator to finish the deletion, "
                   f"or remove the finalizer by hand (kubectl patch --type=json) once its storage is dealt with")
    else:
        message = (f"finalizer {', '.join(others)} came back after this operator ({mine}) took it over: another "
                   f"pfs-layout operator serves namespace {meta.get('namespace')} too; give the releases "
                   f"watchNamespaces that do not overlap")
    post(dict(body), "Warning", "FinalizerConflict", message)
    logger.warning(message)
    _remember(uid, WARNED)


def register(s: Settings) -> None:
    for kind in (ORANGEFS_CLUSTER, LAYOUT_POLICY, COST_CALIBRATION):
        kopf.on.event(kind.group, kind.version, kind.plural, id="take-over-finalizers",
                      when=scope.in_scope)(take_over)
