"""The webhook configuration is level-triggered and homing writes only its own fields (issue
41): before, the caBundle was pushed only when the CA changed, so one failed push (or a hand
edit) left the API server on a stale CA and homing off, with nothing to notice; and each push
PUT the whole `webhooks` list, overwriting what an admin had hardened. On the real API server:
the caBundle broken by hand is repaired within a few checks, and an admin's additions to an
entry and to the object stay."""
from __future__ import annotations

import base64

import pytest

from homing.kube.client import JSON_PATCH, Kube
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/homing-e2e"
HARDENING = {"name": "admin-hardening", "expression": "true"}  # matches every pod: changes no admission


async def test_a_broken_ca_bundle_is_repaired_and_an_admins_additions_stay(kube: Kube, operator):
    before = await kube.request("GET", PATH)
    bundles = [w["clientConfig"]["caBundle"] for w in before["webhooks"]]
    broken = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nbroken by hand\n-----END CERTIFICATE-----\n").decode()
    patch = [
        {"op": "add", "path": "/metadata/annotations", "value": {"example.com/owner": "platform-team"}},
        {"op": "add", "path": "/webhooks/0/matchConditions", "value": [HARDENING]},
        {"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": broken},
    ]
    await kube.request("PATCH", PATH, body=patch, content_type=JSON_PATCH)
    try:
        async def repaired() -> dict | None:
            got = await kube.request("GET", PATH)
            return got if [w["clientConfig"]["caBundle"] for w in got["webhooks"]] == bundles else None

        got = await o.eventually(repaired, timeout=30, what="the caBundle repaired")
        assert got["metadata"]["annotations"]["example.com/owner"] == "platform-team", "the admin's annotation stays"
        assert got["webhooks"][0].get("matchConditions") == [HARDENING], "the admin's matchConditions stay"
        managers = {m["manager"] for m in got["metadata"]["managedFields"]}
        assert "homing" in managers, "homing's fields are applied under its own manager"
    finally:
        current = await kube.request("GET", PATH)
        if current["webhooks"][0].get("matchConditions"):
            await kube.request("PATCH", PATH, body=[{"op": "remove", "path": "/webhooks/0/matchConditions"}],
                               content_type=JSON_PATCH)
