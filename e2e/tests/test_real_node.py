"""The real node: pods placed on it really run (containerd + kubelet), reach the API server through the
`kubernetes` Service, resolve Service and StatefulSet pod names through the cluster DNS, and reach each
other directly and through a ClusterIP Service. Every assertion is on output only a running process can
produce: a random token echoed back, the API server's version read with the pod's own token, addresses
the resolver returned."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pfslayout.images import DEFAULT_OPERATOR_IMAGE
from pfstestkit.real import assert_real_pods, placement

IMAGE = DEFAULT_OPERATOR_IMAGE  # has python3 and the kubernetes client; imported by e2e/harness/cluster.sh up

SERVER = """
import http.server, os, socket
token = os.environ["TOKEN"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{token} {socket.gethostname()}".encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 8080), H).serve_forever()
"""

CLIENT = """
import json, socket, sys, urllib.request
from kubernetes import client, config
ns = sys.argv[1]
out = {}
config.load_incluster_config()
out["version"] = client.VersionApi().get_code().git_version
out["kubernetes"] = socket.gethostbyname("kubernetes.default.svc.cluster.local")
out["web0"] = socket.gethostbyname(f"web-0.web.{ns}.svc.cluster.local")
out["svc"] = socket.gethostbyname(f"web-svc.{ns}.svc.cluster.local")
out["direct"] = urllib.request.urlopen(f"http://web-0.web.{ns}.svc.cluster.local:8080", timeout=10).read().decode()
out["service"] = urllib.request.urlopen(f"http://web-svc.{ns}:8080", timeout=10).read().decode()
print(json.dumps(out))
"""


def pod_security() -> dict[str, Any]:
    return {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"}}


def container_security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def test_pods_on_the_real_node_reach_the_api_dns_and_each_other(cluster, namespace: str) -> None:  # noqa: ANN001
    token = uuid.uuid4().hex
    place = placement(cluster.mode)
    labels = {"app": "web"}
    web_pod: dict[str, Any] = {
        **place, "securityContext": pod_security(), "automountServiceAccountToken": False,
        "containers": [{"name": "web", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                        "command": ["python3", "-c", SERVER], "env": [{"name": "TOKEN", "value": token}],
                        "ports": [{"containerPort": 8080}], "securityContext": container_security(),
                        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}],
    }
    cluster.apply([
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"clusterIP": "None", "selector": labels, "ports": [{"port": 8080}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-svc"},
         "spec": {"selector": labels, "ports": [{"port": 8080, "targetPort": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
         "spec": {"serviceName": "web", "replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": web_pod}}},
        # Reading the server version needs only an authenticated identity: the default account will do.
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
         "spec": {**place, "restartPolicy": "Never", "securityContext": pod_security(),
                  "initContainers": [{"name": "wait", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                      "command": ["python3", "-c",
                                                  "import socket, sys, time\n"
                                                  "for _ in range(120):\n"
                                                  "    try: socket.create_connection((sys.argv[1], 8080), 2); break\n"
                                                  "    except OSError: time.sleep(1)\n",
                                                  f"web-0.web.{namespace}.svc.cluster.local"],
                                      "securityContext": container_security()}],
                  "containers": [{"name": "probe", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                  "command": ["python3", "-c", CLIENT, namespace],
                                  "securityContext": container_security()}]}},
    ], namespace=namespace)

    def finished() -> str | None:
        pod = cluster.kubectl_json("get", "pod", "probe", "-n", namespace)
        phase = pod["status"].get("phase")
        if phase == "Failed":
            logs = cluster.kubectl("logs", "probe", "-n", namespace, "--all-containers", check=False)
            raise AssertionError(f"probe pod failed:\n{logs.stdout}{logs.stderr}\n{json.dumps(pod['status'])}")
        return phase if phase == "Succeeded" else None
    cluster.wait_until(finished, "the probe pod to succeed", timeout=180, interval=1)

    pods = [cluster.kubectl_json("get", "pod", name, "-n", namespace) for name in ("probe", "web-0")]
    assert_real_pods(cluster, pods)
    result = json.loads(cluster.kubectl("logs", "probe", "-n", namespace).stdout.strip().splitlines()[-1])
    server_version = cluster.kubectl_json("version")["serverVersion"]["gitVersion"]
    web0 = pods[1]
    svc = cluster.kubectl_json("get", "service", "web-svc", "-n", namespace)
    assert result["version"] == server_version
    assert result["kubernetes"] == "10.96.0.1"
    assert result["web0"] == web0["status"]["podIP"]
    assert result["svc"] == svc["spec"]["clusterIP"]
    assert result["direct"] == f"{token} web-0"
    assert result["service"] == f"{token} web-0"
