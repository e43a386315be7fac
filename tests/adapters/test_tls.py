"""The webhook certificate is reused while usable and remade when it is not."""
from __future__ import annotations

import asyncio
import datetime
import ssl

import pytest
from cryptography import x509

from homing.kube.certs import tls
from homing.kube.certs.certstore import serving_context

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


# -- the serving policy: TLS 1.2+, AEAD suites only (issue 41) ---------------------------------------

async def _handshake(tmp_path, client: ssl.SSLContext) -> str | None:
    """The TLS version agreed with homing's serving context, or None when the handshake failed."""
    files = tls.new_files(HOSTS)
    cert, key, _ = tls.write(files, str(tmp_path))
    server_context = serving_context()
    server_context.load_cert_chain(str(cert), str(key))
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=client), 5)
    except (ssl.SSLError, ConnectionError):
        return None
    finally:
        server.close()
    version = writer.get_extra_info("ssl_object").version()
    writer.close()
    return version


def _client(maximum=None, ciphers=None):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


async def test_the_webhook_serves_tls_1_2_and_1_3_with_aead_suites_only(tmp_path):
    assert await _handshake(tmp_path, _client()) == "TLSv1.3"
    assert await _handshake(tmp_path, _client(ssl.TLSVersion.TLSv1_2, "ECDHE+AESGCM")) == "TLSv1.2"
    assert await _handshake(tmp_path, _client(ssl.TLSVersion.TLSv1_2, "ECDHE+CHACHA20")) == "TLSv1.2"
    # a client that offers only CBC suites, or nothing newer than TLS 1.1, gets no connection
    cbc = "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA:AES128-SHA256"
    assert await _handshake(tmp_path, _client(ssl.TLSVersion.TLSv1_2, cbc)) is None
    try:
        old = _client(ssl.TLSVersion.TLSv1_1, "ALL:@SECLEVEL=0")
    except ssl.SSLError:
        return  # this OpenSSL cannot even offer TLS 1.1
    assert await _handshake(tmp_path, old) is None


# -- the caller verified: webhook.client_ca_file (issue 41, item 4) --------------------------------

async def _answered(tmp_path, client_ca: str | None, client: ssl.SSLContext) -> bool:
    """Whether a client gets an answer from a server with homing's serving context."""
    files = tls.new_files(HOSTS)
    cert, key, _ = tls.write(files, str(tmp_path / "serving"))
    server_context = serving_context(client_ca)
    server_context.load_cert_chain(str(cert), str(key))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await reader.readline():
            writer.write(b"ok\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=client), 5)
        writer.write(b"review\n")
        got = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
        return got == b"ok\n"
    except (ssl.SSLError, ConnectionError):  # TLS 1.3: the server's refusal arrives as the client reads
        return False
    finally:
        server.close()


def _client_with(cert: tuple | None = None, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if maximum:
        context.maximum_version = maximum
    if cert:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return context


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
async def test_with_a_client_ca_only_the_clients_it_signed_are_answered(tmp_path, version):
    from homing_e2e.pki import make_pki

    ours, theirs = make_pki(tmp_path / "ours"), make_pki(tmp_path / "theirs")
    signed = (ours["webhook-client.crt"], ours["webhook-client.key"])  # the API server's, as the harness gives it
    ca = str(ours["ca.crt"])
    assert await _answered(tmp_path, ca, _client_with(signed, version))
    assert not await _answered(tmp_path, ca, _client_with(None, version)), "no certificate: no answer"
    assert not await _answered(tmp_path, ca, _client_with((theirs["webhook-client.crt"], theirs["webhook-client.key"]), version)), \
        "a certificate another CA signed: no answer"
    assert await _answered(tmp_path, None, _client_with(None, version)), "without a client CA, any client (the default)"


def test_an_unreadable_client_ca_is_refused(tmp_path):
    with pytest.raises(OSError):
        serving_context(str(tmp_path / "missing.crt"))
    (tmp_path / "garbage.crt").write_text("not a certificate")
    with pytest.raises(OSError):  # ssl.SSLError
        serving_context(str(tmp_path / "garbage.crt"))
