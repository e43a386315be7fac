"""A webhook slower than its timeout never holds a pod back: the API server gives up
after timeoutSeconds and, with failurePolicy Ignore, creates the pod unchanged."""
from __future__ import annotations

import asyncio
import time

import pytest

from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration
from homing_e2e import objects as o
from homing_e2e.cluster import free_port
from homing_e2e.operator_process import webhook_host

pytestmark = pytest.mark.cluster


async def test_pod_is_created_when_the_webhook_hangs(kube):
    ns = await o.namespace(kube, f"slow-{o.short_id()}", opted_in=False)  # homing's own webhook stays out
    silent: list[asyncio.StreamWriter] = []

    async def accept_and_say_nothing(reader, writer):
        silent.append(writer)  # keep the connection open, never answer (not even TLS)

    port = free_port()
    server = await asyncio.start_server(accept_and_say_nothing, webhook_host(), port)
    settings = Settings(webhook={"url": f"https://{webhook_host()}:{port}", "configuration_name": f"homing-slow-{ns}",
                                 "timeout_seconds": 2},
                        scope={"namespace_label": f"slow.homing.io/{ns}"})
    config = configuration(settings, b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    config["webhooks"] = config["webhooks"][:1]  # only namespaces labelled for this test
    config["webhooks"][0]["clientConfig"].pop("caBundle")
    await kube.request("POST", path, body=config)
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}", body={"metadata": {"labels": {f"slow.homing.io/{ns}": "true"}}},
                       content_type="application/merge-patch+json")
    try:
        owner = await o.owner_stand_in(kube, ns, "job")
        for attempt in range(20):  # until the API server's webhook informer has the configuration
            calls = len(silent)
            started = time.monotonic()
            created = await o.pod(kube, ns, f"job-{attempt}", owner=owner, annotations={"hccl/rankIndex": str(attempt)})
            elapsed = time.monotonic() - started
            if len(silent) > calls:
                break
            await asyncio.sleep(0.2)
        assert silent, "the API server never called the hanging webhook"
        assert 1.5 <= elapsed < 4.0, f"creation took {elapsed:.2f}s; the timeout is 2s"
        assert o.decision(created) == {}  # admitted unchanged
    finally:
        await kube.request("DELETE", f"{path}/homing-slow-{ns}")
        server.close()
