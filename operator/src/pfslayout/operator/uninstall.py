"""What `helm uninstall` runs before it deletes the operator (the chart's pre-delete hook, docs/helm.md
"Uninstall"): the operator stopped — its Deployment scaled to 0 and its pods gone, so nothing adds a
finalizer back — then this release's finalizer (operator/finalizer.py, named after its scope) taken off
every OrangeFSCluster, CostCalibration and LayoutPolicy it serves. Without that, deleting those objects
or their namespaces after the uninstall hangs forever: their finalizer waits for an operator that is gone.

What the objects lose is their deletion handlers: an OrangeFSCluster deleted afterwards leaves its
hostPath data and PersistentVolumes on the nodes (as `reclaimPolicy: Retain` does); its children go with it
through their owner references. Objects of other releases (other scopes) keep their own finalizers.

    python -m pfslayout.operator.uninstall --namespace NS --deployment NAME --selector SEL \\
        --watch-namespaces 'a,b-*'
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes.client.exceptions import ApiException

from pfslayout.errors import InputError
from pfslayout.k8s.api import Kube, api_message, load_config
from pfslayout.kinds import COST_CALIBRATION, LAYOUT_POLICY, ORANGEFS_CLUSTER
from pfslayout.operator import finalizer, peering, scope
from pfslayout.operator.settings import WATCH_NAMESPACES, parse_namespaces

KINDS = (ORANGEFS_CLUSTER, COST_CALIBRATION, LAYOUT_POLICY)
# A patch that lost a race with another writer (409) is read and redone this many times.
ATTEMPTS = 5


def without(finalizers: Sequence[str], mine: str) -> list[str] | None:
    """The object's finalizers without `mine`; None when it does not carry it (nothing to change)."""
    if mine not in finalizers:
        return None
    return [f for f in finalizers if f != mine]


def stop_operator(kube: Kube, namespace: str, deployment: str, selector: str, timeout: float,
                  sleep: Callable[[float], None] = time.sleep) -> int:
    """Scale the operator's Deployment to 0 and wait until none of its pods is left; the seconds waited."""
    kube.scale("Deployment", namespace, deployment, 0)
    start = time.monotonic()
    while kube.list("Pod", namespace, selector):
        if time.monotonic() - start > timeout:
            names = ", ".join(p["metadata"]["name"] for p in kube.list("Pod", namespace, selector))
            raise TimeoutError(f"the operator's pods ({names}) are still there {timeout:.0f} s after scaling "
                               f"deployment {namespace}/{deployment} to 0")
        sleep(1.0)
    return round(time.monotonic() - start)


def release_objects(kube: Kube, scope_entries: tuple[str, ...] | None) -> dict[str, int]:
    """Take `finalizer.name(scope)` off every served object of the three kinds; per kind, how many."""
    mine = finalizer.name(scope_entries)
    done: dict[str, int] = {}
    for resource in KINDS:
        count = 0
        for obj in kube.custom.list_all(resource):
            meta = obj["metadata"]
            if not scope.served(meta["namespace"], scope_entries):
                continue
            for _ in range(ATTEMPTS):
                rest = without(meta.get("finalizers") or [], mine)
                if rest is None:
                    break
                body: dict[str, Any] = {"metadata": {"finalizers": rest, "resourceVersion": meta["resourceVersion"]}}
                if kube.custom.patch(resource, meta["namespace"], meta["name"], body) is not None:
                    count += 1
                    break
                fresh = kube.custom.get(resource, meta["namespace"], meta["name"])
                if fresh is None:  # deleted meanwhile
                    break
                meta = fresh["metadata"]
            else:
                raise RuntimeError(f"{resource.kind} {meta['namespace']}/{meta['name']}: its finalizer {mine} could "
                                   f"not be removed in {ATTEMPTS} attempts (the object kept changing)")
        done[resource.kind] = count
    return done


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pfslayout-uninstall", description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespace", required=True, help="the release's namespace")
    ap.add_argument("--deployment", required=True, help="the operator's Deployment")
    ap.add_argument("--selector", required=True, help="the label selector of the operator's pods")
    ap.add_argument("--watch-namespaces", default="", help=f"the operator's scope, as {WATCH_NAMESPACES}")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the operator's pods to go")
    ap.add_argument("--peering", default="", help="the replicas' ClusterKopfPeering, deleted once they are gone")
    args = ap.parse_args(argv)
    try:
        entries = parse_namespaces(args.watch_namespaces)
    except InputError as err:
        print(f"pfslayout-uninstall: {err}", file=sys.stderr)
        return 2
    load_config()
    kube = Kube()
    try:
        waited = stop_operator(kube, args.namespace, args.deployment, args.selector, args.timeout)
        done = release_objects(kube, entries)
        # cluster-scoped, so nothing of the release's namespace takes it along
        peering_gone = bool(args.peering) and peering.remove(kube, args.peering)
    except ApiException as err:
        print(f"pfslayout-uninstall: the API server refused: {err.status} {api_message(err)}", file=sys.stderr)
        return 1
    except (TimeoutError, RuntimeError) as err:
        print(f"pfslayout-uninstall: {err}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{n} {kind}" for kind, n in done.items())
    print(f"pfslayout-uninstall: operator stopped ({waited} s); finalizer {finalizer.name(entries)} removed from "
          f"{counts}" + (f"; ClusterKopfPeering {args.peering} deleted" if peering_gone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
