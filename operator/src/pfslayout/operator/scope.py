"""Which namespaces this operator serves (docs/rbac.md).

The chart's `operator.watchNamespaces` arrives as PFSLAYOUT_WATCH_NAMESPACES (read by settings.py).
Kopf itself watches every namespace (`--all-namespaces`, with cluster-wide *read* rights only) and every handler carries
`when=in_scope`, so objects elsewhere are left alone: no finalizer, no status, no children. Kopf's own
`--namespace` scoping is not used because it stops serving a namespace the moment that namespace is
marked for deletion, leaving the finalizers of the objects inside it in place and the namespace stuck in
Terminating for good (seen in the e2e tier). What the operator lists across namespaces by itself (the
webhook's copy of the LayoutPolicies and the namespaces it puts in the webhook's scope) is filtered the
same way: only in served namespaces does the ServiceAccount hold the rights to act.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pfslayout.operator import settings


def served(namespace: str, patterns: tuple[str, ...] | None) -> bool:
    return patterns is None or any(fnmatchcase(namespace, p) for p in patterns)


def in_scope(namespace: str | None = None, **_: Any) -> bool:
    """Kopf's `when=` filter for every handler: cluster-scoped objects (none so far) always pass."""
    return namespace is None or served(namespace, settings.current().watch_namespaces)
