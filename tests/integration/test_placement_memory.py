"""The durable mirror: what `kubectl get pmem` shows, garbage collection with the
owner, hand-edited objects, and warnings on bad input."""
from __future__ import annotations

import subprocess

import pytest

from homing.engine.model import OwnerRef
from homing.kube.client import KubeError
from homing.placementmemory import merge, read_object, resource_name
from homing_e2e import objects as o
from homing_e2e.cluster import BIN_DIR

pytestmark = pytest.mark.cluster


async def _train(kube, ns, ranks: int) -> tuple[dict, list[str]]:
    nodes = [await o.node(kube, f"n{i}-{ns}") for i in range(ranks)]
    owner = await o.owner_stand_in(kube, ns, "train")
    for i, n in enumerate(nodes):
        await o.pod(kube, ns, f"train-{i}", owner=owner, annotations={"hccl/rankIndex": str(i)})
        await o.bind(kube, ns, f"train-{i}", n)
        await o.running(kube, ns, f"train-{i}")
    return owner, nodes


async def _written(kube, ns, ranks: int, warm: int):
    mems = await o.placement_memories(kube, ns)
    summary = ((mems[0].get("status") or {}).get("summary") or {}) if mems else {}
    return mems[0] if summary.get("ranks") == ranks and summary.get("warm") == warm else None


async def test_kubectl_shows_where_each_rank_will_return(kube, kubeconfig, operator, ns):
    owner, nodes = await _train(kube, ns, 3)
    mem = await o.eventually(lambda: _written(kube, ns, 3, 3), what="3 warm ranks written")
    status = mem["status"]
    assert status["owner"]["uid"] == owner["uid"] and status["owner"]["kind"] == "ConfigMap"
    remembered = merge([read_object(mem)]).ranks
    assert {key: entry.node for key, entry in remembered.items()} == {str(i): n for i, n in enumerate(nodes)}
    assert mem["metadata"]["ownerReferences"][0]["uid"] == owner["uid"]
    out = subprocess.run(
        [str(BIN_DIR / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "pmem", "-n", ns],
        capture_output=True, text=True, check=True,
    ).stdout
    header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
    assert header[:7] == ["NAME", "OWNER-KIND", "OWNER", "RANKS", "WARM", "HITS", "MISSES"]
    assert row[1:5] == ["ConfigMap", "train", "3", "3"]


async def test_memory_goes_with_its_owner(kube, operator, ns):
    await _train(kube, ns, 1)
    await o.eventually(lambda: _written(kube, ns, 1, 1), what="memory written")
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/train")

    async def collected():
        return await o.placement_memories(kube, ns) == []

    await o.eventually(collected, timeout=120, what="PlacementMemory garbage-collected with its owner")


async def test_schema_rejects_what_it_can(kube, operator, ns):
    owner = await o.owner_stand_in(kube, ns, "job")
    ref = OwnerRef(api_version="v1", kind="ConfigMap", name="job", namespace=ns, uid=owner["uid"])
    path = f"/apis/homing.io/v1alpha1/namespaces/{ns}/placementmemories"
    await kube.request("POST", path, body={"apiVersion": "homing.io/v1alpha1", "kind": "PlacementMemory",
                                           "metadata": {"name": resource_name(ref)}, "spec": {}})
    bad = {"status": {"owner": {"apiVersion": "v1", "kind": "ConfigMap", "name": "job", "uid": owner["uid"]},
                      "lastSeen": "2026-01-01T00:00:00Z", "stats": {"home": -3}}}
    with pytest.raises(KubeError) as err:
        await kube.request("PATCH", f"{path}/{resource_name(ref)}/status", body=bad, content_type="application/merge-patch+json")
    assert err.value.status == 422


async def test_loader_skips_hand_edited_objects(kube, operator, ns):
    await _train(kube, ns, 1)
    await o.eventually(lambda: _written(kube, ns, 1, 1), what="memory written")
    path = f"/apis/homing.io/v1alpha1/namespaces/{ns}/placementmemories"
    # Valid for the schema, wrong for homing: a real object's status under a name its owner
    # would not get; and an object with no status yet (its writer creates, then writes it).
    (real,) = await o.written_memories(kube, ns)
    for name in ("hand-made", "not-yet-written"):
        await kube.request("POST", path, body={"apiVersion": "homing.io/v1alpha1", "kind": "PlacementMemory",
                                               "metadata": {"name": name}, "spec": {}})
    await kube.request("PATCH", f"{path}/hand-made/status", body={"status": real["status"]}, content_type="application/merge-patch+json")
    operator.stop()
    operator.start()
    log = operator.log_path.read_text()
    assert "PlacementMemory skipped: name does not match its owner" in log
    assert "PlacementMemory not yet written, skipped" in log
    owner = await kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/train")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "train", "uid": owner["metadata"]["uid"], "controller": True}
    await o.delete_pod(kube, ns, "train-0")
    again = await o.pod(kube, ns, "train-0", owner=ref, annotations={"hccl/rankIndex": "0"})
    assert o.home(again) == f"n0-{ns}"


async def test_bad_rank_warns_and_falls_back_to_rankless(kube, operator, ns):
    owner = await o.owner_stand_in(kube, ns, "job")
    p = await o.pod(kube, ns, "job-x", owner=owner, annotations={"hccl/rankIndex": "-1"})
    assert o.decision(p)["rank"] is None

    async def warned():
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/events", query=[("fieldSelector", "reason=InvalidRank")])
        return got["items"]

    events = await o.eventually(warned, what="InvalidRank warning Event")
    assert events[0]["type"] == "Warning" and "hccl/rankIndex" in events[0]["message"]
