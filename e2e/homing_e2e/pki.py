"""Certificates for the local control plane: one CA, the API server's serving cert,
an admin client cert (system:masters), the API server's client cert for webhooks and the
service-account signing key."""
from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _cert(subject, issuer, key_public, signer, *, ca=False, sans=(), usage=None):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key_public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        names = []
        for s in sans:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(s)))
            except ValueError:
                names.append(x509.DNSName(s))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return builder.sign(signer, hashes.SHA256())


WEBHOOK_CLIENT = "kube-apiserver-webhook-client"


def make_pki(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "homing-e2e-ca")])
    ca = _cert(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
    files: dict[str, Path] = {}

    def write(name: str, data: bytes) -> None:
        files[name] = directory / name
        files[name].write_bytes(data)

    write("ca.crt", ca.public_bytes(serialization.Encoding.PEM))
    write("ca.key", _pem_key(ca_key))
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        ca_name,
        server_key.public_key(),
        ca_key,
        sans=("127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        usage=[ExtendedKeyUsageOID.SERVER_AUTH],
    )
    write("apiserver.crt", server.public_bytes(serialization.Encoding.PEM))
    write("apiserver.key", _pem_key(server_key))
    admin, admin_key = _client(ca_name, ca_key, "homing-e2e-admin", ("system:masters",))
    write("admin.crt", admin)
    write("admin.key", admin_key)
    # What the API server presents to a webhook that asks for a client certificate
    # (cluster.py's admission configuration; the operator's webhook.client_ca_file).
    hook, hook_key = _client(ca_name, ca_key, WEBHOOK_CLIENT, ())
    write("webhook-client.crt", hook)
    write("webhook-client.key", hook_key)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    write("sa.key", _pem_key(sa_key))
    write(
        "sa.pub",
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
    )
    return files


def _client(ca_name, ca_key, user: str, groups: tuple[str, ...]) -> tuple[bytes, bytes]:
    """A client certificate (PEM) and its key: the API server takes CN as the user, O as groups."""
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    subject = x509.Name([*names, x509.NameAttribute(NameOID.COMMON_NAME, user)])
    cert = _cert(subject, ca_name, key.public_key(), ca_key, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def client_cert(pki_dir: Path, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A certificate for another user of the local control plane (one with no RBAC, say),
    signed by the CA make_pki wrote into `pki_dir`."""
    ca = x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), password=None)
    cert, key = _client(ca.subject, ca_key, user, groups)
    paths = pki_dir / f"{user}.crt", pki_dir / f"{user}.key"
    paths[0].write_bytes(cert)
    paths[1].write_bytes(key)
    return paths


def serving_pair(directory: Path, name: str, sans: tuple[str, ...] = ("127.0.0.1", "localhost")) -> bytes:
    """A CA of its own and a serving certificate signed by it, as tls.crt and tls.key in
    `directory` (the file names controller-runtime's webhook server reads); returns the
    CA (PEM) for a webhook configuration's caBundle."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name}-ca")])
    ca = _cert(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = _cert(subject, ca_name, key.public_key(), ca_key, sans=sans, usage=[ExtendedKeyUsageOID.SERVER_AUTH])
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(_pem_key(key))
    return ca.public_bytes(serialization.Encoding.PEM)
