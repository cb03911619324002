"""`pfslayout.k8s.api.Kube` calls the built-in kinds' REST paths itself (not the client's generated API
classes): each verb reaches the path, query and body the API server expects, and an error status becomes
the ApiException its callers handle. Test double: the HTTP transport only (`rest_client.request`, a
recorder answering canned responses); the end-to-end tier runs the same calls against the real API server."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import RESTResponse

from pfslayout.k8s.api import APPLY, FIELD_MANAGER, Kube, LogUnreadable


@dataclass
class Raw:  # what urllib3 hands RESTResponse
    status: int
    data: bytes
    reason: str = "OK"
    headers: dict[str, str] = field(default_factory=dict)


class Transport:
    def __init__(self, *answers: tuple[int, Any]) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def request(self, method: str, url: str, headers: dict[str, str] | None = None, body: Any = None,
                post_params: Any = None, _request_timeout: Any = None) -> RESTResponse:
        self.calls.append({"method": method, "url": url, "headers": headers or {}, "body": body,
                           "timeout": _request_timeout})
        status, payload = self.answers.pop(0)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return RESTResponse(Raw(status, data, "OK" if status < 400 else "Error"))


def kube(*answers: tuple[int, Any]) -> tuple[Kube, Transport]:
    conf = client.Configuration(host="https://api.test:6443")
    conf.api_key = {"authorization": "tok"}
    conf.api_key_prefix = {"authorization": "Bearer"}
    api = client.ApiClient(conf)
    transport = Transport(*answers)
    api.rest_client = transport  # type: ignore[assignment]
    return Kube(api, timeout=7.0), transport


@pytest.mark.parametrize(("kind", "path"), [
    ("ConfigMap", "/api/v1/namespaces/ns/configmaps/x"),
    ("Service", "/api/v1/namespaces/ns/services/x"),
    ("PersistentVolumeClaim", "/api/v1/namespaces/ns/persistentvolumeclaims/x"),
    ("Pod", "/api/v1/namespaces/ns/pods/x"),
    ("StatefulSet", "/apis/apps/v1/namespaces/ns/statefulsets/x"),
    ("Deployment", "/apis/apps/v1/namespaces/ns/deployments/x"),
    ("Job", "/apis/batch/v1/namespaces/ns/jobs/x"),
    ("Node", "/api/v1/nodes/x"),  # cluster-scoped: the namespace is not in the path
    ("PersistentVolume", "/api/v1/persistentvolumes/x"),
])
def test_get_reads_the_kinds_path_with_the_token_and_timeout(kind: str, path: str) -> None:
    k, t = kube((200, {"kind": kind, "metadata": {"name": "x"}}))
    assert k.get(kind, "ns", "x") == {"kind": kind, "metadata": {"name": "x"}}
    (call,) = t.calls
    assert (call["method"], call["url"]) == ("GET", f"https://api.test:6443{path}")
    assert call["headers"]["authorization"] == "Bearer tok" and call["timeout"] == 7.0


def test_a_missing_object_is_none_and_other_errors_raise() -> None:
    k, _ = kube((404, {"kind": "Status", "code": 404}))
    assert k.get("Pod", "ns", "gone") is None
    k, _ = kube((403, {"kind": "Status", "message": "forbidden"}))
    with pytest.raises(client.ApiException) as err:
        k.get("Pod", "ns", "x")
    assert err.value.status == 403


def test_apply_is_a_forced_server_side_apply_of_the_whole_object() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
           "data": {"when": datetime.datetime(2026, 11, 29, 7, 0, 0)}}
    before = {"metadata": {"resourceVersion": "1"}}
    after = {"metadata": {"resourceVersion": "2"}}
    k, t = kube((200, before), (200, after))
    change = k.apply(obj)
    assert change.action == "updated" and change.obj == after
    patch = t.calls[1]
    assert patch["method"] == "PATCH"
    assert patch["url"] == ("https://api.test:6443/api/v1/namespaces/ns/configmaps/c"
                            f"?fieldManager={FIELD_MANAGER}&force=true")
    assert patch["headers"]["Content-Type"] == APPLY
    assert json.loads(patch["body"])["data"] == {"when": "2026-11-29T07:00:00"}
    k, t = kube((404, {}), (201, after))
    assert k.apply(obj).action == "created"
    k, t = kube((200, before), (200, before))
    assert k.apply(obj).action == "unchanged"


def test_a_cluster_scoped_object_is_applied_at_its_collection_without_a_namespace() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-0"}, "spec": {}}
    k, t = kube((404, {}), (201, {"metadata": {"resourceVersion": "1"}}))
    assert k.apply(pv).action == "created"
    assert [c["url"].split("?")[0] for c in t.calls] == ["https://api.test:6443/api/v1/persistentvolumes/pv-0"] * 2
    k, t = kube((200, {"items": []}))
    assert k.list("Node", "", "") == [] and t.calls[0]["url"] == "https://api.test:6443/api/v1/nodes"


def test_delete_passes_the_propagation_and_reports_absence() -> None:
    k, t = kube((200, {}))
    assert k.delete("Job", "ns", "j", propagation="Background") is True
    assert t.calls[0]["method"] == "DELETE"
    assert t.calls[0]["url"].endswith("/apis/batch/v1/namespaces/ns/jobs/j?propagationPolicy=Background")
    k, _ = kube((404, {}))
    assert k.delete("Job", "ns", "j") is False


def test_list_selects_by_label_and_returns_the_items() -> None:
    k, t = kube((200, {"items": [{"metadata": {"name": "a"}}]}))
    assert k.list("Pod", "ns", "app=x,tier in (a,b)") == [{"metadata": {"name": "a"}}]
    assert t.calls[0]["url"] == ("https://api.test:6443/api/v1/namespaces/ns/pods"
                                 "?labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29")


def test_pod_log_reads_the_log_subresource() -> None:
    k, t = kube((200, b"line 1\nline 2\n"))
    assert k.pod_log("ns", "p", container="launcher", tail_lines=5) == "line 1\nline 2\n"
    assert t.calls[0]["url"].endswith("/api/v1/namespaces/ns/pods/p/log?container=launcher&tailLines=5")
    k, _ = kube((400, {}))
    assert k.pod_log("ns", "p") is None
    k, _ = kube((502, {"message": "kubelet unreachable"}))
    with pytest.raises(LogUnreadable, match="kubelet unreachable"):
        k.pod_log("ns", "p")


def test_scale_is_a_merge_patch_of_the_scale_subresource_encoded_once() -> None:
    k, t = kube((200, {"kind": "Scale", "spec": {"replicas": 0}}))
    k.scale("Deployment", "sys", "op", 0)
    (call,) = t.calls
    assert (call["method"], call["url"]) == ("PATCH", "https://api.test:6443/apis/apps/v1/namespaces/sys/deployments/op/scale")
    assert call["headers"]["Content-Type"] == "application/merge-patch+json"
    # the object, which the REST client encodes: text would be encoded a second time, and the API server
    # refuses a JSON string as a patch ("cannot unmarshal string into Go value", seen on the real cluster)
    assert call["body"] == {"spec": {"replicas": 0}}
