"""Short-lived certificates renewed while running (behaviour.md "Operation"): two replicas with a
leaf valid 12 s and a CA valid 36 s serve a steady stream of pods for 45 s; the leader
renews the leaf several times and rotates the CA (added to the bundle first, dropped
later), every replica serves the new certificates without restarting, and no admission
fails or goes unanswered."""
from __future__ import annotations

import asyncio
import socket
import ssl
import time
from pathlib import Path

import pytest
from cryptography import x509

from homing.kube.client import Kube
from homing_e2e import failover, objects as o

pytestmark = pytest.mark.cluster

SHORT = {
    "HOMING_WEBHOOK__LEAF_SECONDS": "12",
    "HOMING_WEBHOOK__CA_SECONDS": "36",
    "HOMING_WEBHOOK__CERT_CHECK_SECONDS": "0.5",
    "HOMING_WEBHOOK__CERT_PROPAGATION_SECONDS": "2",
}


def served_serial(host: str, port: int) -> int | None:
    """The serial of the certificate a new connection to the webhook address gets."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=2) as raw, context.wrap_socket(raw) as conn:
            return x509.load_der_x509_certificate(conn.getpeercert(binary_form=True)).serial_number
    except OSError:
        return None


async def test_certificates_renew_while_admissions_flow(kube: Kube, kubeconfig: Path):
    name = f"cert-{o.short_id()}"
    replicas, ns = await failover.replica_set(kube, kubeconfig, name, env=SHORT)
    try:
        replicas.add()
        replicas.add()
        owner = await o.owner_stand_in(kube, ns, "web")
        result = failover.BurstResult()
        creator, done = failover.Creator(kube, ns, owner, result), asyncio.Event()
        creating = asyncio.create_task(creator.run(5.0, until=done))
        serials: set[int] = set()
        bundles: set[str] = set()
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            serial = await asyncio.to_thread(served_serial, replicas.proxy.host, replicas.proxy.port)
            if serial is not None:
                serials.add(serial)
            config = await kube.request("GET", f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{name}")
            bundles.add(config["webhooks"][0]["clientConfig"].get("caBundle", ""))
            await asyncio.sleep(0.5)
        done.set()
        await creating
        leader = replicas.leader()
        assert leader is not None
        renewals = {step: leader.metric("homing_certificate_renewals_total", step=step) for step in ("new-leaf", "new-ca", "trim")}
        print("certificates:", renewals, "served serials:", len(serials), "bundles:", len(bundles), "pods:", result.pods)
        assert renewals["new-leaf"] >= 3 and renewals["new-ca"] >= 1 and renewals["trim"] >= 1
        assert len(serials) >= 3  # new connections got renewed leaves, with no restart in between
        assert len(bundles) >= 3  # one CA, both while rotating, the new one alone
        assert all(p.starts == 1 for p in replicas.processes)
        assert result.pods > 150 and result.failed_creations == 0
        decided = sum(1 for p in creator.created.values() if "homing.io/decision" in (p["metadata"].get("annotations") or {}))
        assert decided == result.pods  # none unanswered across the renewals
    finally:
        replicas.stop()
