"""The memory survives an operator restart; pods never wait on a stopped operator; liveness
and readiness answer where the kubelet asks."""
from __future__ import annotations

import time

import aiohttp
import pytest

from homing_e2e import objects as o

pytestmark = pytest.mark.cluster


async def _remembered(kube, ns, ranks: int):
    mems = await o.placement_memories(kube, ns)
    return mems and ((mems[0].get("status") or {}).get("summary") or {}).get("ranks") == ranks


async def test_memory_reloaded_after_restart(kube, operator, ns):
    a, _, owner, ann = await o.rank_ran_on_a(kube, ns)
    await o.delete_pod(kube, ns, "job-0")
    await o.eventually(lambda: _remembered(kube, ns, 1), what="rank written to its PlacementMemory")
    bundle = await _ca_bundle(kube)
    operator.stop(kill=True)  # no goodbye flush: only what was written survives
    operator.start()
    assert await _ca_bundle(kube) == bundle  # the certificate was kept: no caBundle change to propagate
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    assert o.home(again) == a
    assert o.term_values(again, "In", weight=100) == [[a]]


async def _ca_bundle(kube) -> list[str]:
    config = await kube.request("GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/homing-e2e")
    return [w["clientConfig"]["caBundle"] for w in config["webhooks"]]


async def test_pods_are_admitted_quickly_while_the_operator_is_down(kube, operator, ns):
    await o.node(kube, f"a-{ns}")
    owner = await o.owner_stand_in(kube, ns, "job")
    operator.stop(kill=True)
    started = time.monotonic()
    created = await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    elapsed = time.monotonic() - started
    # failurePolicy Ignore: a refused connection admits the pod unpatched at once;
    # the configured timeoutSeconds (2) bounds the worst case.
    assert elapsed < 2.5, f"pod creation took {elapsed:.2f}s with the operator down"
    assert o.decision(created) == {} and o.terms(created) == []
    operator.start()


async def test_liveness_is_kopfs_endpoint_answering_from_homings_probe(kube, operator, ns):
    """The kubelet's liveness probe reaches kopf's endpoint; homing's probe is what it reports."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{operator.liveness_port}/healthz") as resp:
            assert resp.status == 200
            assert (await resp.json()) == {"homing": "ok"}
        async with session.get(f"http://127.0.0.1:{operator.health_port}/readyz") as resp:
            assert (resp.status, await resp.text()) == (200, "ready")

