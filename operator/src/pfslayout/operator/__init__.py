"""The Kopf operator, run as `kopf run --standalone --all-namespaces -m pfslayout.operator.main` (main.py:
the settings, then every handler registered), serving the namespaces of PFSLAYOUT_WATCH_NAMESPACES
(scope.py, docs/rbac.md). Importing this package, or any module but main.py, registers nothing.
"""
