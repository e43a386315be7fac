"""docs/scale.md: several operators, each a shard owning the namespaces its scope selects.
A shard names its own webhook configuration and Service, answers no per-pod opt-in (the
other shards' namespaces would match it), loads and remembers only its namespaces, and
forgets (never deletes) the owners of a namespace that leaves it."""
from __future__ import annotations

import pydantic
import pytest

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.kube.admission.webhookconfig import configuration
from homing.kube.runtime import Runtime
from homing.kube.state.cluster import ClusterState
from homing.kube.state.pods import PodObserver
from homing.kube.store.store import Store
from homing.placementmemory import encode, resource_body, snapshot

from .test_store_writes import FakeKube, small_owner

SHARD_LABEL = "homing.io/shard"


def shard(name: str, scope: dict | None = None, **extra: object) -> Settings:
    return Settings(shard=name, scope={"namespace_label": SHARD_LABEL, "namespace_label_value": name, **(scope or {})}, **extra)


def namespace(name: str, labels: dict[str, str]) -> dict:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels}}


def test_a_shard_names_its_own_objects_unless_they_are_set():
    a = shard("a")
    assert (a.webhook.configuration_name, a.webhook.service_name) == ("homing-a", "homing-webhook-a")
    assert (a.replicas.lease_name, a.replicas.member_prefix) == ("homing-leader-a", "homing-member-a-")
    assert a.shard_name("homing-tls") == "homing-tls-a" and not a.scope.pod_opt_in
    given = shard("a", webhook={"configuration_name": "mine"}, scope={"pod_opt_in": True})
    assert given.webhook.configuration_name == "mine" and given.scope.pod_opt_in
    plain = Settings()
    assert (plain.webhook.configuration_name, plain.shard_name("homing-leader"), plain.scope.pod_opt_in) == (
        "homing", "homing-leader", True)


def test_a_shard_name_must_fit_in_resource_names():
    with pytest.raises(pydantic.ValidationError):
        Settings(shard="Not A Name")


def test_a_shards_webhook_selects_its_namespaces_only():
    hooks = configuration(shard("a"), None)["webhooks"]
    assert [h["name"] for h in hooks] == ["namespaces.pods.homing.io"]
    assert hooks[0]["namespaceSelector"] == {"matchLabels": {SHARD_LABEL: "a"}}
    assert len(configuration(Settings(), None)["webhooks"]) == 2  # one operator keeps the per-pod opt-in


def test_a_labelled_pod_outside_the_shard_is_not_its_own():
    pod = {"metadata": {"namespace": "nb", "uid": "p", "labels": {"homing.io/enabled": "true"}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"huawei.com/Ascend910": "1"}}}]}}
    for settings, tracked in ((shard("a"), False), (Settings(), True)):
        cluster = ClusterState(settings)
        cluster.observe_namespace(None, namespace("nb", {SHARD_LABEL: "b"}))
        assert PodObserver(settings, MemoryIndex(), cluster).tracked(pod) is tracked


def stored_in(kube: FakeKube, *namespaces: str) -> list:
    mems = [small_owner(namespace=ns, uid=f"uid-{ns}") for ns in namespaces]
    for mem in mems:
        for number, status in enumerate(encode(snapshot(mem)).statuses, 1):
            body = resource_body(mem.owner, number)
            body["metadata"]["namespace"] = mem.owner.namespace
            kube.put({**body, "status": status})
    return mems


async def test_a_shard_loads_only_its_namespaces():
    kube = FakeKube()
    mine, theirs = stored_in(kube, "na", "nb")
    rt = Runtime(shard("a"), store=Store(kube))
    rt.cluster.observe_namespace(None, namespace("na", {SHARD_LABEL: "a"}))
    rt.cluster.observe_namespace(None, namespace("nb", {SHARD_LABEL: "b"}))
    await rt.store.load(rt.index, rt.owns_namespace)
    assert set(rt.index.owners) == {mine.owner.key}
    everything = Runtime(Settings(), store=Store(kube))  # one operator: every namespace is its own
    await everything.store.load(everything.index, everything.owns_namespace)
    assert set(everything.index.owners) == {mine.owner.key, theirs.owner.key}


async def test_a_namespace_that_leaves_the_shard_is_forgotten_not_deleted():
    kube = FakeKube()
    (mem,) = stored_in(kube, "na")
    rt = Runtime(shard("a"), store=Store(kube))
    rt.cluster.observe_namespace(None, namespace("na", {SHARD_LABEL: "a"}))
    await rt.store.load(rt.index, rt.owns_namespace)
    assert mem.owner.key in rt.index.owners
    rt.cluster.observe_namespace("MODIFIED", namespace("na", {SHARD_LABEL: "b"}))
    assert mem.owner.key not in rt.index.owners
    assert kube.stored("na") and not [c for c in kube.calls if c[0] == "DELETE"]


class RecordingKube:
    """Answers every request with an empty list, keeping what was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list, dict | None]] = []

    async def request(self, method, path, body=None, query=None, **_: object) -> dict:
        self.calls.append((method, path, query or [], body))
        return {"metadata": {"resourceVersion": "1"}, "items": []}


async def test_a_shards_replicas_count_only_each_other():
    from homing.kube.leader.replicas import MEMBER_LABEL, Replicas

    kube = RecordingKube()
    replicas = Replicas(kube, shard("a"))
    await replicas._renew_member()
    await replicas._observe_members()
    (_, _, _, member), (_, _, query, _) = kube.calls
    assert member["metadata"]["labels"][MEMBER_LABEL] == "homing-leader-a" and member["metadata"]["name"].startswith("homing-member-a-")
    assert ("labelSelector", f"{MEMBER_LABEL}=homing-leader-a") in query
