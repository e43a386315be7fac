"""The webhook certificate is reused while usable and remade when it is not."""
from __future__ import annotations

import datetime

import pytest
from cryptography import x509

from homing.kube import tls

HOSTS = ["homing-webhook.homing-system.svc", "localhost", "127.0.0.1"]


def test_new_certificate_is_usable_for_its_hosts(tmp_path):
    files = tls.new_files(HOSTS)
    assert tls.usable(files, HOSTS)
    cert_path, key_path, ca = tls.write(files, str(tmp_path))
    assert tls.read(str(tmp_path)) == files and ca == files["ca.crt"]
    assert oct(key_path.stat().st_mode & 0o777) == "0o600"
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    assert cert.issuer == x509.load_pem_x509_certificate(ca).subject


@pytest.mark.parametrize(
    "change, usable",
    [
        ("none", True),
        ("another host", False),
        ("expiring", False),
        ("no key", False),
        ("garbage cert", False),
    ],
)
def test_usable(change, usable):
    hosts = list(HOSTS)
    files = tls.new_files(HOSTS, days=20 if change == "expiring" else 3650)
    if change == "another host":
        hosts.append("homing-webhook.other.svc")
    if change == "no key":
        del files["tls.key"]
    if change == "garbage cert":
        files["tls.crt"] = b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"
    assert tls.usable(files, hosts) is usable


def test_expiry_margin_is_a_month():
    files = tls.new_files(HOSTS, days=31)
    assert tls.usable(files, HOSTS)
    cert = x509.load_pem_x509_certificate(files["tls.crt"])
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    assert left > tls.RENEW_BEFORE
