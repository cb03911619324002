"""Kopf handler modules, one per kind; importing this package registers them all with Kopf."""

from pfslayout.operator.handlers import (
    costcalibration,  # noqa: F401  (registers with Kopf)
    finalizers,  # noqa: F401  (registers with Kopf)
    layoutpolicy,  # noqa: F401  (registers with Kopf)
    mpijob,  # noqa: F401  (registers with Kopf)
    orangefscluster,  # noqa: F401  (registers with Kopf)
)
