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
from urllib.parse import quote

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.custom import CustomObjects

FIELD_MANAGER = "pfs-layout-operator"
APPLY = "application/apply-patch+yaml"

# kind -> the collection's path: namespaced, or cluster-scoped for the last two (their namespace is "").
# Plain REST paths instead of the client's generated
# CoreV1Api/AppsV1Api/BatchV1Api: importing those three (pydantic-validated methods for every resource of
# their groups) took 0.6 s of CPU at every operator start, more than a third of its imports.
_PATHS: dict[str, str] = {
    "ConfigMap": "/api/v1/namespaces/{namespace}/configmaps",
    "Service": "/api/v1/namespaces/{namespace}/services",
    "PersistentVolumeClaim": "/api/v1/namespaces/{namespace}/persistentvolumeclaims",
    "Pod": "/api/v1/namespaces/{namespace}/pods",
    "StatefulSet": "/apis/apps/v1/namespaces/{namespace}/statefulsets",
    "Deployment": "/apis/apps/v1/namespaces/{namespace}/deployments",
    "Job": "/apis/batch/v1/namespaces/{namespace}/jobs",
    "Node": "/api/v1/nodes",
    "PersistentVolume": "/api/v1/persistentvolumes",
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

    def _request(self, method: str, kind: str, namespace: str, name: str = "", *,
                 query: list[tuple[str, str]] | None = None, body: dict[str, Any] | None = None,
                 content_type: str = "application/json", suffix: str = "") -> Any:
        """One call on `kind`'s collection in `namespace` (or on the object `name`, or its `suffix`
        subresource): the raw response, its body read; a non-2xx answer raises ApiException, as the
        generated API classes do with `_preload_content=False`."""
        path = _PATHS[kind].format(namespace=quote(namespace, safe=""))
        if name:
            path += "/" + quote(name, safe="")
        headers = {"Accept": "application/json, */*", "Content-Type": content_type}
        api: Any = self.api_client  # the client ships no annotations for the three calls below
        # Serialized as the generated classes did (dates to ISO strings). The REST client JSON-encodes the body
        # itself for a JSON content type (a merge patch), so that one gets the object; apply's YAML gets text.
        sanitized = api.sanitize_for_serialization(body) if body is not None else None
        request = api.param_serialize(
            method=method, resource_path=path + suffix, query_params=query or [], header_params=headers,
            body=None if sanitized is None else sanitized if "json" in content_type else json.dumps(sanitized),
            auth_settings=["BearerToken"])
        resp: Any = api.call_api(*request, _request_timeout=self.timeout)
        resp.read()
        if not 200 <= resp.status <= 299:
            raise ApiException.from_response(http_resp=resp, body=None, data=None)
        return resp

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _json(self._request("GET", kind, namespace, name))
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def apply(self, obj: dict[str, Any]) -> Change:
        """Server-side apply with a fixed field manager; reports whether anything changed."""
        kind, meta = obj["kind"], obj["metadata"]
        namespace = meta.get("namespace", "")  # none for a cluster-scoped kind
        before = self.get(kind, namespace, meta["name"])
        after = _json(self._request("PATCH", kind, namespace, meta["name"], body=obj, content_type=APPLY,
                                    query=[("fieldManager", FIELD_MANAGER), ("force", "true")]))
        if before is None:
            return Change(after, "created")
        changed = (before.get("metadata") or {}).get("resourceVersion") != (after.get("metadata") or {}).get(
            "resourceVersion")
        return Change(after, "updated" if changed else "unchanged")

    def delete(self, kind: str, namespace: str, name: str, propagation: str | None = None) -> bool:
        try:
            self._request("DELETE", kind, namespace, name,
                          query=[("propagationPolicy", propagation)] if propagation else None)
            return True
        except ApiException as err:
            if err.status == 404:
                return False
            raise

    def pod_log(self, namespace: str, name: str, container: str | None = None, tail_lines: int | None = None
                ) -> str | None:
        """A pod's log (`pods/log`, read-only); None when the pod or its log is gone."""
        query = []
        if container:
            query.append(("container", container))
        if tail_lines:
            query.append(("tailLines", str(tail_lines)))
        try:
            resp = self._request("GET", "Pod", namespace, name, suffix="/log", query=query)
        except ApiException as err:
            if err.status in (400, 404):  # 400: the container has not started (or is gone)
                return None
            if (err.status or 0) >= 500:  # the API server could not reach the pod's kubelet
                raise LogUnreadable(namespace, name, err) from None
            raise
        return bytes(resp.data).decode("utf-8", errors="replace")

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        """Set a workload's replicas through its `scale` subresource (a merge patch: no field ownership taken
        from whoever applied the workload, e.g. Helm)."""
        self._request("PATCH", kind, namespace, name, body={"spec": {"replicas": replicas}},
                      content_type="application/merge-patch+json", suffix="/scale")

    def list(self, kind: str, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        resp = self._request("GET", kind, namespace, query=[("labelSelector", label_selector)] if label_selector
                             else None)
        return list(_json(resp).get("items") or [])
