"""kopf handlers: short, declarative, each handing one watch event to the runtime.
The runtime lives in kopf's `memo`; the durable state lives in PlacementMemory."""
from __future__ import annotations

import asyncio
import logging
import ssl
import time
from urllib.parse import urlparse

import kopf

from homing.config import Settings
from homing.engine.topology import mindcluster
from homing.operator import certstore, logs, metrics, watching, webhookconfig
from homing.operator.events import EventPoster
from homing.operator.kube import MERGE_PATCH, Kube, KubeError
from homing.operator.runtime import Runtime
from homing.operator.store import Store
from homing.placementmemory import GROUP, PLURAL, VERSION

log = logs.get("homing.operator")


def _webhook_hosts(s: Settings) -> list[str]:
    w = s.webhook
    hosts = [f"{w.service_name}.{w.service_namespace}.svc", f"{w.service_name}.{w.service_namespace}.svc.cluster.local"]
    if w.url:
        hosts.insert(0, urlparse(w.url).hostname or "localhost")
    return [*dict.fromkeys([*hosts, "localhost", "127.0.0.1"])]


async def _load(rt: Runtime, kube: Kube) -> None:
    """Memory first, then the live cluster on top of it, before any admission is served."""
    for ns in await kube.list_all("/api/v1/namespaces"):
        rt.observe_namespace("ADDED", ns)
    for rs in await kube.list_all("/apis/apps/v1/replicasets"):
        rt.observe_replicaset("ADDED", rs)
    for node in await kube.list_all("/api/v1/nodes"):
        rt.observe_node("ADDED", node)
    for path, observe in (
        ("/apis/topology.volcano.sh/v1alpha1/hypernodes", rt.observe_hypernode),
        ("/apis/scheduling.volcano.sh/v1beta1/podgroups", rt.observe_podgroup),
    ):
        try:
            for item in await kube.list_all(path):
                observe("ADDED", item)
        except KubeError as err:
            if err.status != 404:
                raise
            log.info("Volcano resource not installed; its topology source is off until it appears", path=path)
    assert rt.store is not None
    loaded = await rt.store.load(rt.index)
    for pod in await kube.list_all("/api/v1/pods"):
        rt.observe_pod(None, pod)
    log.info("memory loaded", owners=len(rt.index.owners), ranks=rt.index.rank_count, resources=loaded)


async def _flush_forever(rt: Runtime) -> None:
    assert rt.store is not None
    while True:
        await asyncio.sleep(rt.settings.lifetimes.write_interval_seconds)
        await rt.store.flush(rt.index)
        rt.refresh_gauges()


async def _sweep_forever(rt: Runtime) -> None:
    assert rt.store is not None
    while True:
        await asyncio.sleep(rt.settings.lifetimes.sweep_interval_seconds)
        for mem in rt.forget_stale(time.time()):
            log.info("owner forgotten", owner=mem.owner.display, ranks=len(mem.ranks))
            await rt.store.delete(mem.owner)


@kopf.on.startup()
async def start(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: object) -> None:
    config = Settings()
    settings.peering.standalone = True
    settings.posting.level = logging.WARNING
    settings.admission.managed = None  # homing writes its own configuration (two selectors)
    kube = await Kube.connect()
    cert, key, ca = await certstore.certificates(kube, config, _webhook_hosts(config))
    settings.admission.server = kopf.WebhookServer(
        addr=config.webhook.listen, port=config.webhook.port, certfile=str(cert), pkeyfile=str(key)
    )
    rt = Runtime(config, store=Store(kube), events=EventPoster(kube))
    await _load(rt, kube)
    if config.webhook.manage_configuration:
        await webhookconfig.ensure(kube, config, ca)
    memo.runtime, memo.kube = rt, kube
    memo.tasks = [asyncio.create_task(_flush_forever(rt)), asyncio.create_task(_sweep_forever(rt))]
    if config.topology.noded:
        memo.tasks.append(asyncio.create_task(watching.watch_prefixed(
            kube, mindcluster.NODE_INFO_NAMESPACE, mindcluster.NODE_INFO_PREFIX, rt.observe_nodeinfo)))
    if config.topology.device_info:
        copier = DeviceInfoCopier(rt, kube)
        memo.tasks.append(asyncio.create_task(watching.watch_prefixed(
            kube, mindcluster.DEVICE_INFO_NAMESPACE, mindcluster.DEVICE_INFO_PREFIX, copier.handle)))
    rt.refresh_gauges()
    memo.tasks.append(asyncio.create_task(_ready_when_serving(config.webhook.port, ca)))


async def _ready_when_serving(port: int, ca: bytes) -> None:
    """Ready once the webhook answers TLS with our certificate: kopf starts its server
    after the start-up handlers, and a pod created before that is admitted unchanged."""
    context = ssl.create_default_context(cadata=ca.decode())
    context.check_hostname = False
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    metrics.READY.set(1)
    log.info("homing ready", webhook_port=port)


@kopf.on.cleanup()
async def stop(memo: kopf.Memo, **_: object) -> None:
    metrics.READY.set(0)
    for task in getattr(memo, "tasks", []):
        task.cancel()
    rt: Runtime | None = getattr(memo, "runtime", None)
    if rt is not None and rt.store is not None:
        await rt.store.flush(rt.index)  # the last second of changes
    if getattr(memo, "kube", None) is not None:
        await memo.kube.close()


@kopf.on.event("", "v1", "pods")
async def pod_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_pod(type, dict(body))


@kopf.on.event("", "v1", "nodes")
async def node_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_node(type, dict(body))


@kopf.on.event("", "v1", "namespaces")
async def namespace_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_namespace(type, dict(body))


@kopf.on.event("apps", "v1", "replicasets")
async def replicaset_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_replicaset(type, dict(body))


@kopf.on.event(GROUP, VERSION, PLURAL)
async def memory_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    """Deleted by garbage collection (owner gone) or by hand (reset): forget it too."""
    if type != "DELETED":
        return
    uid = ((body.get("status") or {}).get("owner") or {}).get("uid")
    rt: Runtime = memo.runtime
    if uid and rt.index.forget(uid) is not None:
        rt.store.created.discard(uid)
        log.info("memory dropped with its PlacementMemory", owner_uid=uid, name=body.metadata.name)


@kopf.on.event("scheduling.volcano.sh", "v1beta1", "podgroups")
async def podgroup_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_podgroup(type, dict(body))


@kopf.on.event("topology.volcano.sh", "v1alpha1", "hypernodes")
async def hypernode_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: object) -> None:
    memo.runtime.observe_hypernode(type, dict(body))


class DeviceInfoCopier:
    """Copies MindCluster's SuperPodID/RackID onto the node's topology labels, so that
    affinity terms (which can only match labels) can name the super-pod and rack."""

    def __init__(self, rt: Runtime, kube: Kube) -> None:
        self.rt, self.kube = rt, kube
        self._tasks: set[asyncio.Task] = set()

    def handle(self, event: str | None, configmap: dict) -> None:
        node = mindcluster.node_of(configmap, mindcluster.DEVICE_INFO_PREFIX)
        if node is None or event == "DELETED":
            return
        try:
            superpod, rack = mindcluster.device_info_ids(configmap)
        except ValueError as bad:
            log.warning("device-info ConfigMap ignored", node=node, detail=str(bad))
            return
        labels = self.rt.settings.labels
        current = self.rt.topology.nodes.get(node)
        have = current.metadata["labels"] if current else {}
        want = {labels.superpod: superpod, labels.rack: rack}
        patch = {k: v for k, v in want.items() if have.get(k) != v}
        if current is None or not patch:
            return
        task = asyncio.get_running_loop().create_task(self._label(node, patch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _label(self, node: str, labels: dict) -> None:
        try:
            await self.kube.request("PATCH", f"/api/v1/nodes/{node}", body={"metadata": {"labels": labels}}, content_type=MERGE_PATCH)
            log.info("node topology labels copied from device info", node=node, labels=labels)
        except KubeError as err:
            log.warning("node topology labels not written", node=node, status=err.status)


@kopf.on.mutate("", "v1", "pods", id="homing-pods", operations=["CREATE"], ignore_failures=True, side_effects=False)
async def admit_pod(
    body: kopf.Body, patch: kopf.Patch, warnings: list[str], dryrun: bool, memo: kopf.Memo, **_: object
) -> None:
    """Preferred node affinity towards home. No API call here; never rejects."""
    pod = dict(body)
    decision = memo.runtime.admit(pod, dryrun)
    warnings.extend(decision.warnings)
    ops = decision.patch(pod)
    if ops:
        patch.fns.append(lambda raw: _apply(raw, ops))


def _apply(raw: dict, ops: list[dict]) -> None:
    import jsonpatch

    jsonpatch.apply_patch(raw, ops, in_place=True)
