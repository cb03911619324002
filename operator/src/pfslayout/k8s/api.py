"""Thin Kubernetes I/O on built-in kinds: server-side apply, get, delete, list -- on plain dicts.

Objects travel as dicts (what the pure builders produce and the tests compare), never as client model
classes. Custom objects (any kind, by group/version/plural) are reached through `Kube.custom`
(`custom.CustomObjects`). Only the verbs the chart's ClusterRole grants are used: apply is a PATCH (plus create when
absent), never a PUT.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.custom import CustomObjects

FIELD_MANAGER = "pfs-layout-operator"
APPLY = "application/apply-patch+yaml"

# kind -> (API class, method suffix of read_/patch_/delete_/list_namespaced_*)
_KINDS: dict[str, tuple[type, str]] = {
    "ConfigMap": (client.CoreV1Api, "config_map"),
    "Service": (client.CoreV1Api, "service"),
    "PersistentVolumeClaim": (client.CoreV1Api, "persistent_volume_claim"),
    "Pod": (client.CoreV1Api, "pod"),
    "StatefulSet": (client.AppsV1Api, "stateful_set"),
    "Deployment": (client.AppsV1Api, "deployment"),
    "Job": (client.BatchV1Api, "job"),
}


def load_config() -> None:
    """In a pod: the ServiceAccount. Elsewhere: $KUBECONFIG (the e2e gives a RBAC-limited one)."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config()  # type: ignore[no-untyped-call]  # the client ships no annotations here
    else:
        config.load_kube_config()  # type: ignore[no-untyped-call]


def _json(resp: Any) -> dict[str, Any]:
    return json.loads(resp.data) if resp.data else {}


@dataclass(frozen=True)
class Change:
    obj: dict[str, Any]
    action: str  # "created", "updated" or "unchanged"


def api_message(err: ApiException) -> str:
    """The API server's own words in a refusal (its Status `message`), or the HTTP reason."""
    try:
        message = json.loads(err.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or err.reason or "")


class LogUnreadable(Exception):
    """A pod's log exists but cannot be read now (5xx: its node's kubelet does not answer). The results
    it carries are not lost, only late: the caller keeps what produced them and asks again later."""

    def __init__(self, namespace: str, pod: str, err: ApiException) -> None:
        super().__init__(f"the log of pod {namespace}/{pod} cannot be read yet ({err.status}: {api_message(err)}); "
                         "retrying")


class Kube:
    def __init__(self, api_client: client.ApiClient | None = None, timeout: float = 30.0) -> None:
        self.api_client = api_client or client.ApiClient()
        self.timeout = timeout
        self.custom = CustomObjects(self.api_client, timeout)

    def _api(self, kind: str) -> tuple[Any, str]:
        cls, suffix = _KINDS[kind]
        return cls(self.api_client), suffix

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        api, suffix = self._api(kind)
        try:
            return _json(getattr(api, f"read_namespaced_{suffix}")(
                name, namespace, _preload_content=False, _request_timeout=self.timeout))
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def apply(self, obj: dict[str, Any]) -> Change:
        """Server-side apply with a fixed field manager; reports whether anything changed."""
        kind, meta = obj["kind"], obj["metadata"]
        before = self.get(kind, meta["namespace"], meta["name"])
        api, suffix = self._api(kind)
        resp = getattr(api, f"patch_namespaced_{suffix}")(
            meta["name"], meta["namespace"], obj, field_manager=FIELD_MANAGER, force=True,
            _content_type=APPLY, _preload_content=False, _request_timeout=self.timeout)
        after = _json(resp)
        if before is None:
            return Change(after, "created")
        changed = (before.get("metadata") or {}).get("resourceVersion") != (after.get("metadata") or {}).get(
            "resourceVersion")
        return Change(after, "updated" if changed else "unchanged")

    def delete(self, kind: str, namespace: str, name: str, propagation: str | None = None) -> bool:
        api, suffix = self._api(kind)
        try:
            getattr(api, f"delete_namespaced_{suffix}")(name, namespace, propagation_policy=propagation,
                                                         _preload_content=False, _request_timeout=self.timeout)
            return True
        except ApiException as err:
            if err.status == 404:
                return False
            raise

    def pod_log(self, namespace: str, name: str, container: str | None = None, tail_lines: int | None = None
                ) -> str | None:
        """A pod's log (`pods/log`, read-only); None when the pod or its log is gone."""
        kwargs: dict[str, Any] = {"_request_timeout": self.timeout}
        if container:
            kwargs["container"] = container
        if tail_lines:
            kwargs["tail_lines"] = tail_lines
        try:
            resp: Any = client.CoreV1Api(self.api_client).read_namespaced_pod_log(
                name, namespace, _preload_content=False, **kwargs)
        except ApiException as err:
            if err.status in (400, 404):  # 400: the container has not started (or is gone)
                return None
            if (err.status or 0) >= 500:  # the API server could not reach the pod's kubelet
                raise LogUnreadable(namespace, name, err) from None
            raise
        return bytes(resp.data).decode("utf-8", errors="replace")

    def list(self, kind: str, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        api, suffix = self._api(kind)
        resp = getattr(api, f"list_namespaced_{suffix}")(namespace, label_selector=label_selector,
                                                         _preload_content=False, _request_timeout=self.timeout)
        return list(_json(resp).get("items") or [])
