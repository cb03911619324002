"""API I/O on custom objects of any kind, addressed by `CustomResource` (group, version, plural).

Dicts in, dicts out, like `api.Kube`. Status goes through the status subresource as a merge patch:
custom resources do not support strategic merge, and lists (conditions) are always sent whole.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.resource import CustomResource

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def merge_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The merge patch (RFC 7386) that sets each of `new`'s fields to its value in `new`, given the object
    holds `old`: a nested object loses the keys `new` no longer has (null in the patch), because a plain
    merge patch keeps them — a re-calibration that drops `e_write` must not leave the previous run's
    value in `status.params`. Fields `old` has and `new` does not name are left alone (partial writes).
    Empty when nothing changes."""
    out: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            nested = merge_patch(before, value)
            nested.update(dict.fromkeys((k for k in before if k not in value), None))
            if nested:
                out[key] = nested
        elif key not in old or before != value:
            out[key] = value
    return out


def _json(resp: Any) -> dict[str, Any]:
    return json.loads(resp.data) if resp.data else {}


class CustomObjects:
    def __init__(self, api_client: client.ApiClient, timeout: float = 30.0) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.timeout = timeout

    def get(self, resource: CustomResource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _json(self.api.get_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name,
                _preload_content=False, _request_timeout=self.timeout))
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def list(self, resource: CustomResource, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
        resp = self.api.list_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, label_selector=label_selector,
            _preload_content=False, _request_timeout=self.timeout)
        return list(_json(resp).get("items") or [])

    def list_all(self, resource: CustomResource, label_selector: str = "") -> builtins.list[dict[str, Any]]:
        """Every namespace's objects (the admission webhook's scope and its copy of the policies, the
        calibrations' probe slot)."""
        resp = self.api.list_cluster_custom_object(resource.group, resource.version, resource.plural,
                                                   label_selector=label_selector,
                                                   _preload_content=False, _request_timeout=self.timeout)
        return list(_json(resp).get("items") or [])

    def create(self, resource: CustomResource, namespace: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Create; None when an object of that name already exists (the caller reads it instead)."""
        try:
            return _json(self.api.create_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, body,
                _preload_content=False, _request_timeout=self.timeout))
        except ApiException as err:
            if err.status == 409:
                return None
            raise

    def delete(self, resource: CustomResource, namespace: str, name: str) -> bool:
        """Delete with background propagation (children go by owner references); False when absent."""
        try:
            self.api.delete_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name,
                propagation_policy="Background", _preload_content=False, _request_timeout=self.timeout)
            return True
        except ApiException as err:
            if err.status == 404:
                return False
            raise

    def patch_status(self, resource: CustomResource, namespace: str, name: str, status: dict[str, Any],
                     resource_version: str | None = None) -> dict[str, Any] | None:
        """A merge patch of the status. With `resource_version`, only of that version of the object: None
        when it changed since (409; read it again and redo the change) or is gone."""
        body: dict[str, Any] = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        try:
            resp = self.api.patch_namespaced_custom_object_status(
                resource.group, resource.version, namespace, resource.plural, name, body,
                _content_type=MERGE, _preload_content=False, _request_timeout=self.timeout)
        except ApiException as err:
            if resource_version is not None and err.status in (404, 409):
                return None
            raise
        return _json(resp)

    def replace_status(self, resource: CustomResource, namespace: str, name: str, old: dict[str, Any],
                       new: dict[str, Any]) -> bool:
        """Make the status ``new`` where ``old`` is the stored one: one merge patch of the difference, with
        nulls for the nested keys ``new`` no longer has (``merge_patch``); nothing sent when they agree.
        True when a patch was sent. The reconcilers' status writers all go through here."""
        change = merge_patch(old, new)
        if change:
            self.patch_status(resource, namespace, name, change)
        return bool(change)

    def patch(self, resource: CustomResource, namespace: str, name: str,
              body: dict[str, Any] | builtins.list[dict[str, Any]]) -> dict[str, Any] | None:
        """A JSON Patch (a list of RFC 6902 operations) or a merge patch (a dict); None when a `test`
        operation failed or the object is gone (someone changed or deleted it first)."""
        try:
            return _json(self.api.patch_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name, body,
                _content_type=JSON_PATCH if isinstance(body, list) else MERGE, _preload_content=False,
                _request_timeout=self.timeout))
        except ApiException as err:
            if err.status in (404, 409, 422):
                return None
            raise
