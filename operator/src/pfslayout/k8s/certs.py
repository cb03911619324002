"""The admission webhook's TLS material (pure): a private CA, the serving certificate it signs, and the
decision when either must be renewed.

The operator keeps them in one Secret (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`, and `ca-previous.crt`
while an older CA may still be trusted) and patches the CA bundle into the MutatingWebhookConfiguration
(admission/upkeep.py). The CA lives long (10 years) and is replaced a year before it expires; the
serving certificate is replaced `renew_before` before it expires or as soon as its DNS names, key or
issuer no longer fit. A replaced CA stays in the bundle until it expires, so the API server trusts the
old and the new serving certificate during the switch.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
CA_RENEW_BEFORE = dt.timedelta(days=365)
# Certificates are back-dated a little: the API server's clock may lag the operator's.
SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class Material:
    """PEM bytes, as stored in the Secret."""

    ca_crt: bytes
    ca_key: bytes
    tls_crt: bytes
    tls_key: bytes
    previous_ca: bytes = b""

    def secret_data(self) -> dict[str, bytes]:
        data = {"ca.crt": self.ca_crt, "ca.key": self.ca_key, "tls.crt": self.tls_crt, "tls.key": self.tls_key}
        if self.previous_ca:
            data["ca-previous.crt"] = self.previous_ca
        return data

    def bundle(self, now: dt.datetime) -> bytes:
        """What the API server must trust: the current CA and, until it expires, the one it replaced."""
        out = self.ca_crt
        if self.previous_ca:
            try:
                old = x509.load_pem_x509_certificate(self.previous_ca)
            except ValueError:
                return out
            if old.not_valid_after_utc > now:
                out += self.previous_ca
        return out


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def new_ca(common_name: str, now: dt.datetime) -> tuple[bytes, bytes]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - SKEW)
            .not_valid_after(now + dt.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def new_serving(ca_crt: bytes, ca_key: bytes, dns_names: list[str], now: dt.datetime, days: float
                ) -> tuple[bytes, bytes]:
    ca = x509.load_pem_x509_certificate(ca_crt)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    assert isinstance(signer, ec.EllipticCurvePrivateKey)
    key = _key()
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(signer, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def load(data: dict[str, bytes]) -> Material | None:
    """The Secret's material, or None when a required key is missing."""
    try:
        return Material(data["ca.crt"], data["ca.key"], data["tls.crt"], data["tls.key"],
                        data.get("ca-previous.crt", b""))
    except KeyError:
        return None


def _serving_problem(m: Material, dns_names: list[str], now: dt.datetime, renew_before: dt.timedelta) -> str | None:
    try:
        ca = x509.load_pem_x509_certificate(m.ca_crt)
        cert = x509.load_pem_x509_certificate(m.tls_crt)
        key = serialization.load_pem_private_key(m.tls_key, password=None)
    except ValueError as err:
        return f"unreadable serving certificate or key ({err})"
    if cert.issuer != ca.subject:
        return "serving certificate not issued by the current CA"
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError) as err:
        return f"serving certificate's signature does not verify against the CA ({type(err).__name__})"
    if key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) != \
            cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
        return "tls.key does not match tls.crt"
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if sorted(names) != sorted(dns_names):
        return f"serving certificate names {sorted(names)}, the Service needs {sorted(dns_names)}"
    if cert.not_valid_after_utc - renew_before <= now:
        return f"serving certificate expires {cert.not_valid_after_utc.isoformat()}"
    return None


def renewal(m: Material | None, dns_names: list[str], now: dt.datetime, renew_before: dt.timedelta
            ) -> tuple[str, str] | None:
    """(`ca` or `serving`, why) when something must be regenerated; None when all is current."""
    if m is None:
        return "ca", "no certificate yet"
    try:
        ca = x509.load_pem_x509_certificate(m.ca_crt)
        ca_key = serialization.load_pem_private_key(m.ca_key, password=None)
    except ValueError as err:
        return "ca", f"unreadable CA ({err})"
    pub = ca.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if ca_key.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo) != pub:
        return "ca", "ca.key does not match ca.crt"
    if ca.not_valid_after_utc - CA_RENEW_BEFORE <= now:
        return "ca", f"CA expires {ca.not_valid_after_utc.isoformat()}"
    problem = _serving_problem(m, dns_names, now, renew_before)
    return ("serving", problem) if problem else None


def renewed(m: Material | None, what: str, common_name: str, dns_names: list[str], now: dt.datetime,
            days: float) -> Material:
    """New material: a new CA (the old one kept as previous) and serving pair, or a new serving pair only."""
    if what == "ca" or m is None:
        ca_crt, ca_key = new_ca(common_name, now)
        previous = m.ca_crt if m is not None else b""
    else:
        ca_crt, ca_key, previous = m.ca_crt, m.ca_key, m.previous_ca
    tls_crt, tls_key = new_serving(ca_crt, ca_key, dns_names, now, days)
    return Material(ca_crt, ca_key, tls_crt, tls_key, previous)


def not_after(pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc
