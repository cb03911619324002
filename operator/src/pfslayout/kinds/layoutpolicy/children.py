"""The labels of the objects a LayoutPolicy owns (its hint and trace-collector Jobs, its shim and learned
ConfigMaps): one place, so the reconcilers that create them and the selectors that find them agree."""

from __future__ import annotations

from pfslayout.k8s.meta import Owner

POLICY_LABEL = "pfslayout.io/layoutpolicy"


def labels(owner: Owner) -> dict[str, str]:
    return {"app.kubernetes.io/name": "layoutpolicy", "app.kubernetes.io/instance": owner.name,
            POLICY_LABEL: owner.name}
