"""The webhook's certificates: a self-signed CA (or, while one is rotated, two: the
bundle) and a short-lived serving certificate it signs (certplan.py says when to renew
which). Kept across restarts and shared by the replicas (a Secret in-cluster, the TLS
directory locally); the bundle goes into the webhook configuration's caBundle."""
from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from homing.kube.certs import certplan


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


FILES = ("tls.crt", "tls.key", "ca.crt", "ca.key")  # ca.crt: the bundle, newest CA first
SKEW = datetime.timedelta(minutes=5)  # not_before is set this far back, for clocks behind ours
RENEW_BEFORE = datetime.timedelta(days=30)  # usable(): a kept certificate good for this much longer


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def split_bundle(data: bytes) -> list[bytes]:
    """The PEM certificates of a bundle, in order."""
    end = b"-----END CERTIFICATE-----"
    return [part.strip() + b"\n" + end + b"\n" for part in data.split(end) if b"BEGIN CERTIFICATE" in part]


def new_ca(seconds: float) -> tuple[bytes, bytes]:
    """(certificate, key) of a new self-signed CA valid for `seconds` from now."""
    now, key = _now(), ec.generate_private_key(ec.SECP256R1())
    name = _name(f"homing-webhook-ca-{x509.random_serial_number() % 10**6}")  # each CA its own subject
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(now + datetime.timedelta(seconds=seconds))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def new_leaf(ca_pem: bytes, ca_key_pem: bytes, hosts: list[str], seconds: float) -> tuple[bytes, bytes]:
    """(certificate, key) for the webhook's hosts, signed by the CA, never outliving it."""
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    now, key = _now(), ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - SKEW)
        .not_valid_after(min(now + datetime.timedelta(seconds=seconds), ca.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def new_files(hosts: list[str], days: float = 3650, leaf_days: float | None = None, keep_cas: Sequence[bytes] = ()) -> dict[str, bytes]:
    """A new CA and leaf; `keep_cas` (still trusted, older) stay in the bundle after the new CA."""
    ca, ca_key = new_ca(days * 86400)
    cert, key = new_leaf(ca, ca_key, hosts, (leaf_days if leaf_days is not None else days) * 86400)
    return {"tls.crt": cert, "tls.key": key, "ca.crt": b"".join([ca, *keep_cas]), "ca.key": ca_key}


def _lifetime(cert: x509.Certificate) -> certplan.Lifetime:
    return certplan.Lifetime(
        issued=(cert.not_valid_before_utc + SKEW).timestamp(), expires=cert.not_valid_after_utc.timestamp()
    )


def _hosts(cert: x509.Certificate) -> set[str]:
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n) for n in names.get_values_for_type(x509.DNSName)} | {str(n) for n in names.get_values_for_type(x509.IPAddress)}


def kept(files: dict[str, bytes], hosts: list[str]) -> certplan.Kept:
    """The facts certplan.plan decides on; anything unreadable reads as missing."""
    try:
        cas = [x509.load_pem_x509_certificate(p) for p in split_bundle(files.get("ca.crt", b""))]
    except ValueError:
        cas = []
    try:
        ca_key = serialization.load_pem_private_key(files["ca.key"], password=None)
        key_ok = bool(cas) and ca_key.public_key() == cas[0].public_key()
    except (KeyError, ValueError, TypeError):
        key_ok = False
    try:
        leaf = x509.load_pem_x509_certificate(files["tls.crt"])
        leaf_key = serialization.load_pem_private_key(files["tls.key"], password=None)
        hosts_ok = set(hosts) <= _hosts(leaf) and leaf_key.public_key() == leaf.public_key()
        by_newest = bool(cas) and leaf.issuer == cas[0].subject
        return certplan.Kept(_lifetime(leaf), hosts_ok, by_newest, tuple(map(_lifetime, cas)), key_ok)
    except (KeyError, ValueError, TypeError, x509.ExtensionNotFound):
        return certplan.Kept(None, False, False, tuple(map(_lifetime, cas)), key_ok)


def usable(files: dict[str, bytes], hosts: list[str]) -> bool:
    """A kept certificate names every host and is valid for a month more (a long-lived install)."""
    facts = kept(files, hosts)
    margin = RENEW_BEFORE.total_seconds()
    return facts.leaf is not None and facts.leaf_hosts_ok and facts.leaf.expires - _now().timestamp() > margin


def write(files: dict[str, bytes], directory: str) -> tuple[Path, Path, bytes]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    for secret in ("tls.key", "ca.key"):
        if (out / secret).exists():
            (out / secret).chmod(0o600)
    return out / "tls.crt", out / "tls.key", files["ca.crt"]


def read(directory: str) -> dict[str, bytes]:
    folder = Path(directory)
    return {name: (folder / name).read_bytes() for name in FILES if (folder / name).is_file()}
