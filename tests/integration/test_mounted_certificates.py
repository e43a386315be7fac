"""cert-manager mode (issue 41): the webhook serves the certificate mounted from a Secret that
cert-manager issues and renews, reloads it when the files change, and leaves the webhook
configuration's caBundle to cert-manager's CA injector: the level-triggered repair of the
configuration must never fight the injector over it. On the real API server, with the
operator as a process; here the test plays cert-manager (writes the files) and its injector
(writes the caBundle)."""
from __future__ import annotations

import asyncio
import base64
import socket
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography import x509

from homing.kube.certs import tls
from homing.kube.client import Kube
from homing_e2e import objects as o
from homing_e2e.operator_process import OperatorProcess, webhook_host

pytestmark = pytest.mark.cluster

LABEL = "mounted-e2e.homing.io/enabled"  # its own scope: the session operator's pods are not its own
API = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def issue(directory: Path) -> tuple[str, int]:
    """What cert-manager's Secret holds, as the kubelet mounts it: (the CA, base64; the leaf's serial)."""
    files = tls.new_files([webhook_host(), "127.0.0.1", "localhost"])
    tls.write({k: files[k] for k in ("tls.crt", "tls.key", "ca.crt")}, str(directory))
    serial = x509.load_pem_x509_certificate(files["tls.crt"]).serial_number
    return base64.b64encode(files["ca.crt"]).decode(), serial


def served_serial(port: int) -> int | None:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, context.wrap_socket(raw) as conn:
            return x509.load_der_x509_certificate(conn.getpeercert(binary_form=True)).serial_number
    except OSError:
        return None


async def inject(kube: Kube, name: str, ca: str) -> None:
    """cert-manager's cainjector: the CA into every entry's caBundle."""
    config = await kube.request("GET", f"{API}/{name}")
    webhooks = [{"name": w["name"], "clientConfig": {**w["clientConfig"], "caBundle": ca}} for w in config["webhooks"]]
    await kube.request("PATCH", f"{API}/{name}", body={"webhooks": webhooks}, content_type="application/strategic-merge-patch+json")


async def bundles(kube: Kube, name: str) -> set[str]:
    config = await kube.request("GET", f"{API}/{name}")
    return {w["clientConfig"].get("caBundle", "") for w in config["webhooks"]}


async def test_a_mounted_certificate_is_served_renewed_and_its_bundle_left_to_the_injector(kube: Kube, kubeconfig: Path):
    name = f"homing-mounted-{o.short_id()}"
    workdir = Path(tempfile.mkdtemp(prefix="homing-mounted-"))
    mounted = workdir / "mounted"
    ca, serial = issue(mounted)
    proc = OperatorProcess(kubeconfig, workdir, webhook_host=webhook_host(), env={
        "HOMING_WEBHOOK__MOUNTED_TLS_DIR": str(mounted),
        "HOMING_WEBHOOK__CONFIGURATION_NAME": name,
        "HOMING_WEBHOOK__CONFIGURATION_CHECK_SECONDS": "1",
        "HOMING_WEBHOOK__CERT_CHECK_SECONDS": "0.5",
        "HOMING_SCOPE__NAMESPACE_LABEL": LABEL,
        "HOMING_SCOPE__POD_LABEL": LABEL,
    })
    proc.start()
    try:
        await o.eventually(lambda: kube.request("GET", f"{API}/{name}"), what="the webhook configuration created")
        assert await bundles(kube, name) == {""}, "homing writes no caBundle of its own"
        await inject(kube, name, ca)
        assert await asyncio.to_thread(served_serial, proc.webhook_port) == serial, "the mounted certificate is served"

        ns = f"t-{o.short_id()}"
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": {LABEL: "true"}}})
        await o.eventually(lambda: kube.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default"), what="SA")
        owner = await o.owner_stand_in(kube, ns, "job")

        async def admitted() -> bool:  # the API server trusts the injected CA and reaches the webhook
            name_ = f"job-{o.short_id()}"
            created = await o.pod(kube, ns, name_, owner=owner, annotations={"volcano.sh/task-index": "0"})
            return bool(o.decision(created))

        await o.eventually(admitted, timeout=30, what="a pod admitted with homing's decision")
        await asyncio.sleep(3)  # three configuration checks
        assert await bundles(kube, name) == {ca}, "the injected caBundle is left alone"

        renewed_ca, renewed = issue(mounted)  # cert-manager renews: the kubelet updates the mounted files
        await inject(kube, name, renewed_ca)

        async def serving_renewed() -> bool:
            return await asyncio.to_thread(served_serial, proc.webhook_port) == renewed

        await o.eventually(serving_renewed, timeout=30, what="the renewed certificate served")
        await o.eventually(admitted, timeout=30, what="a pod admitted after the renewal")
        assert await bundles(kube, name) == {renewed_ca}
    finally:
        proc.stop()
        await kube.request("DELETE", f"{API}/{name}")
        print(f"operator log: {proc.log_path}")
