"""Object metadata for any kind: owner references, names and labels, selector strings, content hashes.

Every child object the operator creates carries a controller owner reference to the custom object it
belongs to, so Kubernetes' garbage collector removes it with its owner.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pfslayout.k8s.resource import CustomResource


@dataclass(frozen=True)
class Owner:
    """A custom object as its children see it."""

    resource: CustomResource
    name: str
    namespace: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, "name": self.name,
                "uid": self.uid, "controller": True, "blockOwnerDeletion": True}


def owner_of(resource: CustomResource, body: dict[str, Any]) -> Owner:
    """The owner described by a custom object as the API server returns it."""
    meta = body["metadata"]
    return Owner(resource, meta["name"], meta["namespace"], meta["uid"])


def object_metadata(owner: Owner, name: str, labels: dict[str, str], annotations: dict[str, str] | None = None
                    ) -> dict[str, Any]:
    """`metadata` of a child: in its owner's namespace, labelled, owned (and annotated when asked)."""
    out: dict[str, Any] = {"name": name, "namespace": owner.namespace, "labels": labels,
                           "ownerReferences": [owner.reference()]}
    if annotations:
        out["annotations"] = annotations
    return out


def selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def content_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
