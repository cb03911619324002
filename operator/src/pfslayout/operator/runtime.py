"""What every handler module shares in the operator process: the API client and the Event poster."""

from __future__ import annotations

from typing import Any, cast

import kopf

from pfslayout.k8s.api import Kube

_kube: Kube | None = None


def kube() -> Kube:
    """The process's API client, created on first use: after `settings.startup` loaded the configuration."""
    global _kube
    if _kube is None:
        _kube = Kube()
    return _kube


def post(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
    """Post an Event about `body` (the events API refuses messages over 1 KiB)."""
    kopf.event(cast(kopf.Body, body), type=type_, reason=reason, message=message[:1024])
