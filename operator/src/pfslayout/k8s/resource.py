"""The identity of a custom resource kind: what the API paths, owner references and Kopf handlers need."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CustomResource:
    group: str
    version: str
    kind: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"
