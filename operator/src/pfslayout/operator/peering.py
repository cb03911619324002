"""The operator's peering object (leader election among its replicas, docs/reliability.md): Kopf keeps its
replicas' records in the status of the cluster-scoped `ClusterKopfPeering` named by `kopf run --peering`
(the chart: the release's full name) but does not create it; without it every replica would stay paused.
Created at start-up, by whichever replica comes first."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s.api import Kube

GROUP, VERSION, PLURAL, KIND = "kopf.dev", "v1", "clusterkopfpeerings", "ClusterKopfPeering"


class PeeringUnavailable(RuntimeError):
    """The peering CRD is not installed: the operator cannot elect a leader."""


def ensure(kube: Kube, name: str) -> bool:
    """ClusterKopfPeering `name` exists afterwards; True when this call created it."""
    api: Any = client.CustomObjectsApi(kube.api_client)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {
        "name": name, "labels": {"app.kubernetes.io/managed-by": "pfs-layout-operator"}}}
    try:
        api.create_cluster_custom_object(GROUP, VERSION, PLURAL, body, _request_timeout=kube.timeout)
    except ApiException as err:
        if err.status == 409:
            return False  # another replica, or an earlier run, made it
        if err.status == 404:
            raise PeeringUnavailable(
                f"CRD {PLURAL}.{GROUP} is not installed, so the replicas cannot elect a leader (kopf run "
                f"--peering={name}): install the chart's CRDs (crds.install=true) or run one replica with "
                "`kopf run --standalone`") from None
        raise
    return True


def remove(kube: Kube, name: str) -> bool:
    """ClusterKopfPeering `name` deleted (the uninstall, once the replicas are gone); False when absent."""
    api: Any = client.CustomObjectsApi(kube.api_client)
    try:
        api.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name, _request_timeout=kube.timeout)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True
