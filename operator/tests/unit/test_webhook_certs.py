"""The webhook's TLS material (k8s/certs.py) and the configuration upkeep's pure parts
(admission/upkeep.py): when to renew what, the CA bundle across a CA switch, and the JSON Patch that
brings the configuration's bundle and namespace scope to what they must be."""

from __future__ import annotations

import base64
import datetime as dt
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from pfslayout.k8s import certs
from pfslayout.operator.admission import upkeep

NOW = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
NAMES = ["pfs-webhook.pfs-system.svc", "pfs-webhook.pfs-system.svc.cluster.local"]
MONTH = dt.timedelta(days=30)


def fresh(now: dt.datetime = NOW, days: float = 365) -> certs.Material:
    return certs.renewed(None, "ca", "pfs-webhook-ca", NAMES, now, days)


def test_new_material_is_a_chain_python_ssl_accepts() -> None:
    m = fresh()
    assert certs.renewal(m, NAMES, NOW, MONTH) is None
    cert = x509.load_pem_x509_certificate(m.tls_crt)
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == NAMES
    with tempfile.TemporaryDirectory() as d:
        crt, key = Path(d, "tls.crt"), Path(d, "tls.key")
        crt.write_bytes(m.tls_crt)
        key.write_bytes(m.tls_key)
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.load_cert_chain(crt, key)  # raises if key and certificate do not match
        client = ssl.create_default_context(cadata=m.bundle(NOW).decode())
        assert client.get_ca_certs()[0]["subject"] == ((("commonName", "pfs-webhook-ca"),),)


def test_nothing_yet_or_garbage_means_a_new_ca() -> None:
    assert certs.renewal(None, NAMES, NOW, MONTH) == ("ca", "no certificate yet")
    assert certs.load({"tls.crt": b"x"}) is None
    broken = certs.Material(b"junk", b"junk", b"junk", b"junk")
    what, why = certs.renewal(broken, NAMES, NOW, MONTH)  # type: ignore[misc]
    assert what == "ca" and "unreadable CA" in why


def test_the_serving_certificate_is_renewed_before_it_expires() -> None:
    m = fresh(days=60)
    assert certs.renewal(m, NAMES, NOW + dt.timedelta(days=29), MONTH) is None
    what, why = certs.renewal(m, NAMES, NOW + dt.timedelta(days=31), MONTH)  # type: ignore[misc]
    assert what == "serving" and "expires" in why
    again = certs.renewed(m, what, "pfs-webhook-ca", NAMES, NOW + dt.timedelta(days=31), 60)
    assert again.ca_crt == m.ca_crt and again.tls_crt != m.tls_crt and not again.previous_ca
    assert certs.renewal(again, NAMES, NOW + dt.timedelta(days=31), MONTH) is None


@pytest.mark.parametrize("broken", ["names", "key", "issuer"])
def test_a_serving_certificate_that_does_not_fit_is_replaced(broken: str) -> None:
    m = fresh()
    other = fresh()
    if broken == "names":
        m = certs.Material(m.ca_crt, m.ca_key, *certs.new_serving(m.ca_crt, m.ca_key, ["old.svc"], NOW, 365))
        needle = "the Service needs"
    elif broken == "key":
        m = certs.Material(m.ca_crt, m.ca_key, m.tls_crt, other.tls_key)
        needle = "tls.key does not match"
    else:
        m = certs.Material(m.ca_crt, m.ca_key, other.tls_crt, other.tls_key)
        needle = "does not verify"
    what, why = certs.renewal(m, NAMES, NOW, MONTH)  # type: ignore[misc]
    assert what == "serving" and needle in why


def test_an_expiring_ca_is_replaced_and_the_old_one_stays_trusted_until_it_expires() -> None:
    m = fresh()
    late = NOW + dt.timedelta(days=certs.CA_DAYS) - dt.timedelta(days=100)
    what, why = certs.renewal(m, NAMES, late, MONTH)  # type: ignore[misc]
    assert what == "ca" and "CA expires" in why
    new = certs.renewed(m, what, "pfs-webhook-ca", NAMES, late, 365)
    assert new.previous_ca == m.ca_crt and new.ca_crt != m.ca_crt
    assert new.bundle(late) == new.ca_crt + m.ca_crt
    assert new.bundle(late + dt.timedelta(days=200)) == new.ca_crt  # the old CA has expired
    assert set(new.secret_data()) == {"ca.crt", "ca.key", "tls.crt", "tls.key", "ca-previous.crt"}


def mwc(bundle: str | None = None, selector: dict | None = None) -> dict:
    hook: dict = {"name": upkeep.WEBHOOK, "clientConfig": {"service": {"name": "s"}}}
    if bundle is not None:
        hook["clientConfig"]["caBundle"] = bundle
    if selector is not None:
        hook["namespaceSelector"] = selector
    return {"metadata": {"resourceVersion": "9"}, "webhooks": [{"name": "other.example.com"}, hook]}


def test_the_configuration_patch_sets_bundle_and_scope_and_is_guarded() -> None:
    sel = upkeep.scope_selector({"b", "a"})
    assert sel == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                         "values": ["a", "b"]}]}
    ops = upkeep.config_patch(mwc(), b"PEM", sel)
    assert ops == [{"op": "test", "path": "/metadata/resourceVersion", "value": "9"},
                   {"op": "add", "path": "/webhooks/1/clientConfig/caBundle",
                    "value": base64.b64encode(b"PEM").decode()},
                   {"op": "add", "path": "/webhooks/1/namespaceSelector", "value": sel}]
    assert upkeep.config_patch(mwc(base64.b64encode(b"PEM").decode(), sel), b"PEM", sel) == []
    assert upkeep.config_patch(mwc(), None, None) == []  # mounted certificates, fixed scope: hands off


def test_no_policy_means_a_scope_no_namespace_can_match() -> None:
    (expr,) = upkeep.scope_selector(set())["matchExpressions"]
    assert expr["values"] == [upkeep.NO_NAMESPACE] and "." in upkeep.NO_NAMESPACE  # never a namespace name
    pols: list[dict[str, Any]] = [{"metadata": {"namespace": "a"}, "spec": {}},
                                  {"metadata": {"namespace": "b"}, "spec": {"shim": {"enabled": False}}},
                                  {"metadata": {"namespace": "c", "deletionTimestamp": "t"}, "spec": {}}]
    assert upkeep.injecting_namespaces(pols) == {"a"}
