"""Which namespaces this operator serves (docs/rbac.md).

The chart's `operator.watchNamespaces` arrives as PFSLAYOUT_WATCH_NAMESPACES. Kopf itself watches every
namespace (`--all-namespaces`, with cluster-wide *read* rights only) and every handler carries
`when=in_scope`, so objects elsewhere are left alone: no finalizer, no status, no children. Kopf's own
`--namespace` scoping is not used because it stops serving a namespace the moment that namespace is
marked for deletion, leaving the finalizers of the objects inside it in place and the namespace stuck in
Terminating for good (seen in the e2e tier). What the operator lists across namespaces by itself (the
webhook's copy of the LayoutPolicies and the namespaces it puts in the webhook's scope) is filtered the
same way: only in served namespaces does the ServiceAccount hold the rights to act.
"""

from __future__ import annotations

import functools
import os
import re
from fnmatch import fnmatchcase
from typing import Any

from pfslayout.errors import InputError

VAR = "PFSLAYOUT_WATCH_NAMESPACES"
# A namespace name, or a glob of one with * and ? (fnmatch, case-sensitive).
_ENTRY = re.compile(r"^[a-z0-9*?]([-a-z0-9*?]{0,61}[a-z0-9*?])?$")


def parse(raw: str | None) -> tuple[str, ...] | None:
    """The comma-separated entries; None (every namespace) when unset, empty or "*"."""
    entries = tuple(e.strip() for e in (raw or "").split(",") if e.strip())
    if not entries or "*" in entries:
        return None
    for e in entries:
        if not _ENTRY.match(e):
            raise InputError(VAR, f"{e!r} is neither a namespace name nor a glob of one",
                             "give names like 'batch' or globs like 'batch-*', separated by commas")
    return entries


def from_env() -> tuple[str, ...] | None:
    return parse(os.environ.get(VAR))


def served(namespace: str, patterns: tuple[str, ...] | None) -> bool:
    return patterns is None or any(fnmatchcase(namespace, p) for p in patterns)


@functools.cache
def current() -> tuple[str, ...] | None:
    """This process's served namespaces, read once (the chart sets the variable; it never changes)."""
    return from_env()


def in_scope(namespace: str | None = None, **_: Any) -> bool:
    """Kopf's `when=` filter for every handler: cluster-scoped objects (none so far) always pass."""
    return namespace is None or served(namespace, current())
