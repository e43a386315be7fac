"""A self-signed CA and serving certificate for the webhook. Kept across restarts (in a
Secret in-cluster, in the TLS directory locally): the API server picks up a new
caBundle a moment after it is written, and pods created in that moment would be
admitted unchanged. The CA goes into the webhook configuration's caBundle."""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


FILES = ("tls.crt", "tls.key", "ca.crt")
RENEW_BEFORE = datetime.timedelta(days=30)


def usable(files: dict[str, bytes], hosts: list[str]) -> bool:
    """A kept certificate is reused while it is valid for a month more and names every host."""
    try:
        cert = x509.load_pem_x509_certificate(files["tls.crt"])
        x509.load_pem_x509_certificate(files["ca.crt"])
        serialization.load_pem_private_key(files["tls.key"], password=None)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (KeyError, ValueError, x509.ExtensionNotFound):
        return False
    have = {str(n) for n in names.get_values_for_type(x509.DNSName)}
    have |= {str(n) for n in names.get_values_for_type(x509.IPAddress)}
    expires = cert.not_valid_after_utc
    return set(hosts) <= have and expires - datetime.datetime.now(datetime.timezone.utc) > RENEW_BEFORE


def write(files: dict[str, bytes], directory: str) -> tuple[Path, Path, bytes]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / name).write_bytes(data)
    (out / "tls.key").chmod(0o600)
    return out / "tls.crt", out / "tls.key", files["ca.crt"]


def read(directory: str) -> dict[str, bytes]:
    folder = Path(directory)
    return {name: (folder / name).read_bytes() for name in FILES if (folder / name).is_file()}


def new_files(hosts: list[str], days: int = 3650) -> dict[str, bytes]:
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("homing-webhook-ca"))
        .issuer_name(_name("homing-webhook-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return {
        "tls.crt": cert.public_bytes(serialization.Encoding.PEM),
        "tls.key": key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        "ca.crt": ca_cert.public_bytes(serialization.Encoding.PEM),
    }
