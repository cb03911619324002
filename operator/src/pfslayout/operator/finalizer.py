"""The finalizer an operator puts on the objects it serves, and taking over those of earlier operators.

Kopf removes *its* finalizer from every object of a kind it handles whose handlers all filter the object
out ("no handlers requiring it"): with one finalizer name, an operator serving `team-a-*` stripped it
from every object of an operator serving `team-b-*` at their next event, and a deleted OrangeFSCluster
vanished without its deletion handlers — no storage wiped, no Deleting event (seen with the e2e lanes'
operators side by side). So an operator scoped by `operator.watchNamespaces` uses a finalizer named
after its scope, which no operator of another scope touches; one serving every namespace keeps the
original name. Pure: the handlers module (handlers/finalizers.py) applies the decisions.

Objects made by an earlier operator carry its finalizer (the original name before this change, or the
name of another scope after a change of `watchNamespaces`); the operator now serving them takes them over
(`adopted`), or no one would ever remove it and their deletion would hang.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

# The only finalizer before scopes had names of their own; still that of an operator serving everything.
LEGACY = "pfslayout.io/finalizer"


def name(scope: Sequence[str] | None) -> str:
    """The finalizer of an operator serving `scope` (settings.watch_namespaces; None: every namespace). The same
    for the same set of entries in any order, so every replica and restart agrees."""
    if scope is None:
        return LEGACY
    digest = hashlib.sha256(",".join(sorted(set(scope))).encode()).hexdigest()[:12]
    return f"{LEGACY}-{digest}"


def ours(finalizer: str) -> bool:
    """Whether a finalizer is one of this operator's family (any scope's, or the original)."""
    return finalizer == LEGACY or finalizer.startswith(f"{LEGACY}-")


def foreign(finalizers: Sequence[str], mine: str) -> list[str]:
    """The finalizers another pfs-layout operator (another scope, an earlier version) left."""
    return [f for f in finalizers if ours(f) and f != mine]


def adopted(finalizers: Sequence[str], mine: str, deleting: bool) -> list[str] | None:
    """The object's finalizers with the foreign ones of the family replaced by `mine`, in place of the
    first, the others kept in order; None when there is nothing to change, or nothing that may change: an
    object being deleted takes no new finalizer (the API server refuses it), so one that carries only a
    foreign one is left as it is (handlers/finalizers.py says so in an Event)."""
    others = foreign(finalizers, mine)
    if not others:
        return None
    if deleting and mine not in finalizers:
        return None
    out: list[str] = []
    for f in finalizers:
        if f in others:
            f = mine
        if f not in out or not ours(f):
            out.append(f)
    return out
