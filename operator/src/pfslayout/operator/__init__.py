"""The Kopf operator: `kopf run --standalone --all-namespaces -m pfslayout.operator`, serving the namespaces
of PFSLAYOUT_WATCH_NAMESPACES (scope.py, docs/rbac.md).

Importing the package registers the start-up settings and every kind's handlers with Kopf.
"""

from pfslayout.operator import handlers, settings  # noqa: F401  (registers with Kopf)
