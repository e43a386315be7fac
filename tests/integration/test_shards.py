"""docs/scale.md: two operators side by side on one control plane, each a shard owning
the namespaces labelled with its name. Each remembers and sends home only the pods of
its own namespaces, and neither's sweeper deletes the other's PlacementMemory."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from homing.kube.client import Kube, KubeError
from homing_e2e import objects as o
from homing_e2e.operator_process import OperatorProcess, webhook_host

pytestmark = pytest.mark.cluster

SHARD_LABEL = "homing.io/shard"
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def shard_operator(kubeconfig: Path, name: str, ttl: float) -> OperatorProcess:
    return OperatorProcess(
        kubeconfig,
        Path(tempfile.mkdtemp(prefix=f"homing-shard-{name}-")),
        webhook_host=webhook_host(),
        env={
            "HOMING_SHARD": name,
            "HOMING_SCOPE__NAMESPACE_LABEL": SHARD_LABEL,
            "HOMING_SCOPE__NAMESPACE_LABEL_VALUE": name,
            "HOMING_LIFETIMES__TTL_SECONDS": str(ttl),
            "HOMING_LIFETIMES__SWEEP_INTERVAL_SECONDS": "1",
        },
    )


async def shard_namespace(kube: Kube, shard: str) -> str:
    name = f"s{shard}-{o.short_id()}"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name, "labels": {SHARD_LABEL: shard}}})
    await o.eventually(lambda: kube.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default"), what="default SA")
    return name


async def remembered_on(kube: Kube, ns: str, node: str) -> dict:
    """A job whose rank 0 was bound to `node`, its pod gone, its memory written."""
    owner = await o.owner_stand_in(kube, ns, "job")
    await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    await o.bind(kube, ns, "job-0", node)
    await o.running(kube, ns, "job-0")
    await o.eventually(lambda: o.placement_memories(kube, ns), timeout=60, what=f"PlacementMemory in {ns}")
    await o.delete_pod(kube, ns, "job-0")
    return owner


async def test_two_shards_keep_to_their_own_namespaces(kubeconfig: Path, kube: Kube):
    try:  # where both shards keep their Leases, as the manifests install it
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "homing-system"}})
    except KubeError as err:
        if err.status != 409:
            raise
    node_a, node_b = await o.node(kube, f"shard-a-{o.short_id()}"), await o.node(kube, f"shard-b-{o.short_id()}")
    ns_a, ns_b = await shard_namespace(kube, "a"), await shard_namespace(kube, "b")
    b = shard_operator(kubeconfig, "b", ttl=3600).start()
    a = shard_operator(kubeconfig, "a", ttl=4)  # a sweeps whatever it holds, no live pod, after 4 s
    try:
        await remembered_on(kube, ns_b, node_b)  # b's memory is in the API before a starts and loads
        a.start()
        for shard in ("a", "b"):
            config = await o.eventually(lambda: kube.request("GET", f"{CONFIGURATIONS}/homing-{shard}"),  # noqa: B023 (awaited here)
                                        what="written when elected")
            assert [h["namespaceSelector"] for h in config["webhooks"]] == [{"matchLabels": {SHARD_LABEL: shard}}]

        owner_a = await remembered_on(kube, ns_a, node_a)
        back = await o.pod(kube, ns_a, "job-0", owner=owner_a, annotations={"volcano.sh/task-index": "0"})
        assert o.home(back) == node_a  # a sent its own pod home
        await o.delete_pod(kube, ns_a, "job-0")

        async def swept() -> bool:
            return not await o.placement_memories(kube, ns_a)

        await o.eventually(swept, timeout=60, what="a's sweeper deleting a's own stale memory")
        async def a_holds_nothing() -> bool:
            return a.metric("homing_memory_owners") == 0  # a forgot its own; b's it never held

        await o.eventually(a_holds_nothing, timeout=60, what="a holding no owner")
        (kept,) = await o.placement_memories(kube, ns_b)
        assert kept["status"]["summary"]["ranks"] == 1
        assert b.metric("homing_memory_owners") >= 1
    finally:
        a.stop()
        b.stop()
        for shard in ("a", "b"):
            try:
                await kube.request("DELETE", f"{CONFIGURATIONS}/homing-{shard}")
            except Exception:
                pass  # not created: the test failed before
