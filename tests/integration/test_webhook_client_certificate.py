"""The webhook verifies its caller (issue 41, item 4; config.Webhook.client_ca_file): with a
client CA set, only a client whose certificate that CA signed has a review decided. On the
real API server of the harness, which presents its webhook client certificate (signed by the
cluster CA, e2e/homing_e2e/cluster.py's admission configuration) to any webhook that asks.
kind's API server presents none, so this runs on the harness's control plane only."""
from __future__ import annotations

import asyncio
import os
import socket
import ssl
import tempfile
from pathlib import Path

import orjson
import pytest

from homing.kube.client import Kube
from homing_e2e import objects as o
from homing_e2e.cluster import webhook_calls_failed_open
from homing_e2e.operator_process import OperatorProcess, webhook_host
from homing_e2e.pki import make_pki

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(os.environ.get("HOMING_E2E_KUBECONFIG")),
                       reason="the harness's API server presents a webhook client certificate; another cluster's may not"),
]

LABEL = "client-cert-e2e.homing.io/enabled"  # its own scope: the session operator's pods are not its own
API = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def operator(kubeconfig: Path, client_ca: Path) -> OperatorProcess:
    workdir = Path(tempfile.mkdtemp(prefix="homing-client-ca-"))
    return OperatorProcess(kubeconfig, workdir, webhook_host=webhook_host(), env={
        "HOMING_WEBHOOK__CLIENT_CA_FILE": str(client_ca),
        "HOMING_WEBHOOK__CONFIGURATION_NAME": f"homing-client-ca-{o.short_id()}",
        "HOMING_SCOPE__NAMESPACE_LABEL": LABEL,
        "HOMING_SCOPE__POD_LABEL": LABEL,
    })


async def decided(kube: Kube, ns: str, owner: dict) -> bool:
    created = await o.pod(kube, ns, f"job-{o.short_id()}", owner=owner, annotations={"volcano.sh/task-index": "0"})
    return bool(o.decision(created))


def review_without_a_certificate(port: int) -> bytes:
    """A well-formed review sent over TLS by a client with no certificate: what comes back."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "0f6b2c1e-0000-4000-8000-000000000000", "operation": "CREATE", "namespace": "default",
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "object": {"kind": "Pod", "metadata": {}}}})
    head = f"POST /homing-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as conn:
            conn.sendall(head.encode() + body)
            return conn.recv(4096)
    except OSError:  # the handshake refused (TLS 1.2), or its alert read back (TLS 1.3)
        return b""


async def test_only_the_api_server_s_certificate_has_a_review_decided(kube: Kube, kubeconfig: Path):
    pki = kubeconfig.parent / "pki"
    proc = operator(kubeconfig, pki / "ca.crt")
    proc.start()  # ready: its own TLS self-check gets through without a certificate
    ns = await o.namespace(kube, f"t-{o.short_id()}", opted_in=False)
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}", body={"metadata": {"labels": {LABEL: "true"}}},
                       content_type="application/merge-patch+json")
    owner = await o.owner_stand_in(kube, ns, "job")
    try:
        await o.eventually(lambda: decided(kube, ns, owner), timeout=30, what="a pod decided: the API server's certificate verified")
        assert await asyncio.to_thread(review_without_a_certificate, proc.webhook_port) == b"", \
            "a client without a certificate gets no answer"
    finally:
        proc.stop()
        await kube.request("DELETE", f"{API}/{proc.env()['HOMING_WEBHOOK__CONFIGURATION_NAME']}")
        print(f"operator log: {proc.log_path}")

    other = make_pki(Path(tempfile.mkdtemp(prefix="homing-other-ca-")))["ca.crt"]  # a CA that signed nothing the API server has
    proc = operator(kubeconfig, other)
    proc.start()
    try:
        await o.eventually(lambda: kube.request("GET", f"{API}/{proc.env()['HOMING_WEBHOOK__CONFIGURATION_NAME']}"),
                           what="the webhook configuration written")
        await asyncio.sleep(2)  # the caBundle in effect at the API server (cert_propagation_seconds)
        for _ in range(3):
            assert not await decided(kube, ns, owner), "a caller the CA did not sign is refused: the pod is admitted unchanged"
        refused = [line for line in webhook_calls_failed_open(kubeconfig, last=50) if f":{proc.webhook_port}/" in line]
        assert refused, "the API server called the webhook and was refused (it failed open)"
    finally:
        proc.stop()
        await kube.request("DELETE", f"{API}/{proc.env()['HOMING_WEBHOOK__CONFIGURATION_NAME']}")
        print(f"operator log: {proc.log_path}")


def test_an_unreadable_client_ca_stops_the_start(kubeconfig: Path, tmp_path: Path):
    proc = operator(kubeconfig, tmp_path / "missing-ca.crt")
    with pytest.raises(RuntimeError, match="client_ca_file"):
        proc.start(timeout=30)
