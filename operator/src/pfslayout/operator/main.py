"""The operator's entry module: `kopf run --standalone --all-namespaces -m pfslayout.operator.main` (the
chart's Deployment; a local operator runs the same command).

Importing it reads the settings (settings.py) — a malformed one stops the process here, before Kopf
starts, with one line per bad variable and exit status 2 — then registers the start-up and every kind's
handlers with Kopf's default registry. Nothing else in the package registers anything on import.
"""

from __future__ import annotations

import sys

from pfslayout.operator import handlers, settings, startup

try:
    SETTINGS = settings.current()
except settings.SettingsError as err:
    print(f"pfs-layout-operator: {err}".replace("\n", "\npfs-layout-operator: "), file=sys.stderr)
    raise SystemExit(2) from None

startup.register(SETTINGS)
handlers.register(SETTINGS)
