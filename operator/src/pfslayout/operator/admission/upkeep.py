"""The admission webhook's upkeep: its TLS material and the MutatingWebhookConfiguration the chart made.

Only an operator that serves the webhook (PFSLAYOUT_WEBHOOK_ADDR set, as the chart does when
`webhook.enabled`) touches either:

* certificates (`PFSLAYOUT_WEBHOOK_CERTS=operator`, the chart's default): generated into the Secret
  `PFSLAYOUT_WEBHOOK_SECRET` (k8s/certs.py decides when to renew), written to `PFSLAYOUT_WEBHOOK_CERT_DIR`
  for the server (Kopf's WebhookServer restarts itself when the files change), and the CA bundle patched
  into the configuration. With `mounted` (cert-manager or the user's own Secret) the files come from the
  Secret's volume and the bundle from cert-manager's CA injector or the chart.
* the configuration's `namespaceSelector` (`PFSLAYOUT_WEBHOOK_SCOPE=managed`, the chart's default): the
  namespaces that hold a LayoutPolicy with the shim enabled, by their `kubernetes.io/metadata.name`
  label. So with the operator down and `failurePolicy: Fail`, MPIJobs are refused only where a policy
  would have injected them; elsewhere the API server never calls the webhook at all.

`upkeep` runs at start-up (before the server listens) and every PFSLAYOUT_WEBHOOK_SYNC_SECONDS;
`include_namespace` runs before each LayoutPolicy reconcile, so a policy's namespace is in scope
before the policy reports Ready.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import threading
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from pfslayout.k8s import certs
from pfslayout.k8s.api import Kube
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.operator import scope
from pfslayout.operator.admission import policy_cache
from pfslayout.operator.settings import WebhookSettings

WEBHOOK = "mpijobs.pfslayout.io"  # the entry of the configuration this operator serves
NS_LABEL = "kubernetes.io/metadata.name"
# Namespace names are DNS labels (no dots): this value can never match one, so an empty scope
# sends nothing to the webhook (an `In` needs at least one value).
NO_NAMESPACE = "none.pfslayout.io"

log = logging.getLogger("pfslayout.webhook")


# --- certificates -------------------------------------------------------------------------------------


def _secret_data(secret: Any) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _write_files(s: WebhookSettings, m: certs.Material) -> bool:
    """The serving pair on disk for the server; True when the files changed. Written beside and renamed,
    so the server never reads a certificate without its key's match for long."""
    s.cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    changed = False
    for path, data in ((s.keyfile, m.tls_key), (s.certfile, m.tls_crt)):
        if path.exists() and path.read_bytes() == data:
            continue
        tmp = path.with_suffix(".new")
        tmp.write_bytes(data)
        tmp.chmod(0o600)
        tmp.replace(path)
        changed = True
    return changed


def ensure_certs(kube: Kube, s: WebhookSettings, now: dt.datetime | None = None) -> certs.Material:
    """The current material, renewed into the Secret first when needed (k8s/certs.py `renewal`)."""
    core: Any = client.CoreV1Api(kube.api_client)  # dict bodies: the models' annotations do not admit them
    now = now or dt.datetime.now(dt.UTC)
    for _ in range(5):
        try:
            secret: dict[str, Any] | None = json.loads(core.read_namespaced_secret(
                s.secret, s.namespace, _preload_content=False, _request_timeout=kube.timeout).data)
        except ApiException as err:
            if err.status != 404:
                raise
            secret = None
        current = certs.load(_secret_data(secret)) if secret else None
        need = certs.renewal(current, s.dns_names(), now, s.renew_before)
        if need is None:
            assert current is not None
            if _write_files(s, current):
                log.info(f"webhook certificate from Secret {s.secret} in place (expires "
                         f"{certs.not_after(current.tls_crt).isoformat()})")
            return current
        what, why = need
        fresh = certs.renewed(current, what, f"{s.service}-ca", s.dns_names(), now, s.serving_days)
        data = {k: base64.b64encode(v).decode() for k, v in fresh.secret_data().items()}
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                                "metadata": {"name": s.secret, "namespace": s.namespace,
                                             "labels": {"app.kubernetes.io/managed-by": "pfs-layout-operator",
                                                        "app.kubernetes.io/component": "webhook"}},
                                "data": data}
        try:
            if secret is None:
                core.create_namespaced_secret(s.namespace, body, _request_timeout=kube.timeout)
            else:
                body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                core.replace_namespaced_secret(s.secret, s.namespace, body, _request_timeout=kube.timeout)
        except ApiException as err:
            if err.status == 409:  # another writer got there first: read what it wrote
                continue
            raise
        log.info(f"webhook {'CA and ' if what == 'ca' else ''}serving certificate renewed in Secret "
                 f"{s.secret}: {why}")
        _write_files(s, fresh)
        return fresh
    raise RuntimeError(f"Secret {s.namespace}/{s.secret} kept changing under the operator; is a second "
                       "operator running?")


# --- the configuration --------------------------------------------------------------------------------


def scope_selector(namespaces: set[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": NS_LABEL, "operator": "In",
                                  "values": sorted(namespaces) or [NO_NAMESPACE]}]}


def injecting_namespaces(policies: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["namespace"] for p in policies
            if (((p.get("spec") or {}).get("shim") or {}).get("enabled", True))
            and not (p.get("metadata") or {}).get("deletionTimestamp")}


def config_patch(mwc: dict[str, Any], bundle: bytes | None, selector: dict[str, Any] | None
                 ) -> list[dict[str, Any]]:
    """JSON Patch operations bringing our entry to `bundle` / `selector` (None: leave as is); [] when it
    already is. Guarded by the resourceVersion: a concurrent writer (Helm, cert-manager) wins and the
    next sync retries."""
    ops: list[dict[str, Any]] = []
    for i, hook in enumerate(mwc.get("webhooks") or []):
        if hook.get("name") != WEBHOOK:
            continue
        if bundle is not None:
            b64 = base64.b64encode(bundle).decode()
            if (hook.get("clientConfig") or {}).get("caBundle") != b64:
                ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": b64})
        if selector is not None and hook.get("namespaceSelector") != selector:
            ops.append({"op": "add", "path": f"/webhooks/{i}/namespaceSelector", "value": selector})
    if ops:
        ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion",
                       "value": mwc["metadata"]["resourceVersion"]})
    return ops


def sync_configuration(kube: Kube, s: WebhookSettings, bundle: bytes | None, selector: dict[str, Any] | None
                       ) -> bool | None:
    """True when the configuration was changed, False when it already was as wanted (or is absent),
    None when someone else changed it first (call again)."""
    api: Any = client.AdmissionregistrationV1Api(kube.api_client)
    try:
        mwc = json.loads(api.read_mutating_webhook_configuration(
            s.configuration, _preload_content=False, _request_timeout=kube.timeout).data)
    except ApiException as err:
        if err.status == 404:
            log.warning(f"MutatingWebhookConfiguration {s.configuration} does not exist: the API server will "
                        "not call the webhook (was the chart installed with webhook.enabled=false?)")
            return False
        raise
    ops = config_patch(mwc, bundle, selector)
    if not any(op["op"] != "test" for op in ops):
        return False
    try:
        api.patch_mutating_webhook_configuration(s.configuration, ops, _request_timeout=kube.timeout)
    except ApiException as err:
        if err.status in (409, 422):
            return None  # changed under us
        raise
    log.info(f"MutatingWebhookConfiguration {s.configuration} updated: "
             + ", ".join(op["path"].rsplit("/", 1)[-1] for op in ops if op["op"] != "test"))
    return True


_scope_lock = threading.Lock()
_scope: set[str] | None = None


def upkeep(kube: Kube, s: WebhookSettings) -> None:
    """Certificates current, the bundle in the configuration, the scope equal to the policies' namespaces,
    the admission's copy of the policies checked against a fresh LIST."""
    global _scope
    bundle = ensure_certs(kube, s).bundle(dt.datetime.now(dt.UTC)) if s.certs == "operator" else None
    policies = [p for p in kube.custom.list_all(LP) if scope.in_scope(p["metadata"]["namespace"])]
    policy_cache.POLICIES.merge_listing(policies, lambda ns, name: kube.custom.get(LP, ns, name) is None)
    selector = None
    if s.scope == "managed":
        with _scope_lock:
            _scope = injecting_namespaces(policies)
            selector = scope_selector(_scope)
    sync_configuration(kube, s, bundle, selector)


def include_namespace(kube: Kube, s: WebhookSettings | None, namespace: str) -> None:
    """Put `namespace` in the webhook's scope now (before its policy is reconciled), if it is not yet."""
    global _scope
    if s is None or s.scope != "managed":
        return
    with _scope_lock:
        if _scope is not None and namespace in _scope:
            return
        wanted = (_scope or set()) | {namespace}
        for _ in range(5):
            if sync_configuration(kube, s, None, scope_selector(wanted)) is not None:
                _scope = wanted
                return
        raise RuntimeError(f"MutatingWebhookConfiguration {s.configuration} kept changing; namespace {namespace} "
                           "is not in the webhook's scope yet")


def run_forever(kube: Kube, s: WebhookSettings, stop: threading.Event) -> None:
    """The periodic upkeep (a daemon thread of the operator process); errors are logged and retried."""
    while not stop.wait(s.sync_s):
        try:
            upkeep(kube, s)
        except Exception as err:  # an API hiccup must not end the upkeep
            log.error(f"webhook upkeep failed, retrying in {s.sync_s:g} s: {err}")
