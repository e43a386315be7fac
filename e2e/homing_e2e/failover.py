"""The failover scenario (issue 10), shared by tests/integration/test_replicas_failover.py
(which asserts) and bench/takeover.py (which records): a rankless workload with a
remembered pool of homes, then a burst of pods created at a steady rate while the
leading replica is killed; a binder stands in for a scheduler that honours the promise
(a pod with a home binds there, one without binds to a spare node), so every binding is
either a remembered home or a node the memory must learn during the takeover."""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from homing.operator.kube import Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION
from homing.placementmemory.decode import merge, read_object
from homing_e2e import objects as o
from homing_e2e.replicaset import OperatorReplicas

APP_LABEL = "homing-e2e/app"


@dataclass
class BurstResult:
    pods: int = 0
    failed_creations: int = 0
    decided: int = 0  # pods that carry homing.io/decision
    promised: int = 0  # pods that carry homing.io/home
    duplicate_promises: list[str] = field(default_factory=list)  # homes held by two pods at once
    bindings: dict[str, str] = field(default_factory=dict)  # pod -> node, remembered phase included
    missing_from_memory: list[str] = field(default_factory=list)  # bound nodes not in the PlacementMemory
    killed_after: int = 0  # pods created before the leader was killed
    takeover_seconds: float | None = None  # SIGKILL of the leader -> another replica leading, caught up
    bound_during_takeover: int = 0
    burst_seconds: float = 0.0

    def summary(self) -> dict:
        out = asdict(self)
        out["bindings"] = len(self.bindings)
        return out


async def nodes(kube: Kube, prefix: str, count: int, chunk: int = 25) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for start in range(0, count, chunk):
        await asyncio.gather(*(o.node(kube, n) for n in names[start:start + chunk]))
    return names


def pod_body(name: str, owner: dict, app: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {APP_LABEL: app}, "ownerReferences": [owner]},
        "spec": {"containers": [o.container()], "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0},
    }


async def memory_pool(kube: Kube, ns: str) -> set[str]:
    got = await kube.request("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}")
    items = got.get("items") or []
    if not items:
        return set()
    return set(merge([read_object(i) for i in items]).pool)


async def remember(kube: Kube, ns: str, owner: dict, homes: list[str], result: BurstResult) -> None:
    """The workload ran on every home once (bound, then deleted): its pool remembers them."""
    async def one(i: int, node: str) -> None:
        name = f"before-{i}"
        await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=pod_body(name, owner, "before"))
        await o.bind(kube, ns, name, node)
        result.bindings[name] = node

    for start in range(0, len(homes), 25):
        await asyncio.gather(*(one(i, n) for i, n in enumerate(homes[start:start + 25], start)))

    async def learned() -> bool:
        return set(homes) <= await memory_pool(kube, ns)

    await o.eventually(learned, timeout=90, what="the pool of homes in the PlacementMemory")
    await kube.request(
        "DELETE", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"{APP_LABEL}=before"), ("gracePeriodSeconds", "0")]
    )

    async def gone() -> bool:
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"{APP_LABEL}=before")])
        return not got["items"]

    await o.eventually(gone, timeout=60, what="the first pods gone")


class Binder:
    """Binds each pending burst pod: to its home when it has one, else to a spare node."""

    def __init__(self, kube: Kube, ns: str, homes: set[str], spare: list[str], result: BurstResult) -> None:
        self.kube, self.ns, self.homes, self.spare, self.result = kube, ns, homes, spare, result
        self.takeover: tuple[float, float] | None = None  # (killed, leading again), monotonic
        self._next = 0

    async def run(self, expected: int) -> None:
        bound = 0
        while bound < expected:
            got = await self.kube.request("GET", f"/api/v1/namespaces/{self.ns}/pods", query=[("labelSelector", f"{APP_LABEL}=burst")])
            for pod in got["items"]:
                if not pod["spec"].get("nodeName") and pod["metadata"]["name"] not in self.result.bindings:
                    await self._bind(pod)
            bound = sum(1 for name in self.result.bindings if name.startswith("burst-"))
            await asyncio.sleep(0.1)

    async def _bind(self, pod: dict) -> None:
        name, home = pod["metadata"]["name"], o.home(pod)
        if home not in self.homes:
            home = self.spare[self._next % len(self.spare)]
            self._next += 1
        try:
            await o.bind(self.kube, self.ns, name, home)
        except KubeError as err:
            if err.status != 409:
                raise
        self.result.bindings[name] = home
        now = time.monotonic()
        if self.takeover and self.takeover[0] <= now and (self.takeover[1] == 0 or now <= self.takeover[1]):
            self.result.bound_during_takeover += 1


async def burst_with_leader_killed(
    kube: Kube, replicas: OperatorReplicas, ns: str, owner: dict, homes: list[str], spare: list[str],
    pods: int = 300, rate: float = 20.0, kill_after: int = 100, result: BurstResult | None = None,
) -> BurstResult:
    result = result or BurstResult()
    result.pods, result.killed_after = pods, kill_after
    binder = Binder(kube, ns, set(homes), spare, result)
    binding = asyncio.create_task(binder.run(pods))
    created: dict[str, dict] = {}
    slots = asyncio.Semaphore(16)
    takeover: asyncio.Task | None = None

    async def create(i: int) -> None:
        name = f"burst-{i}"
        async with slots:
            try:
                created[name] = await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=pod_body(name, owner, "burst"))
            except Exception:
                result.failed_creations += 1

    async def kill_leader() -> None:
        leader, _ = await asyncio.to_thread(replicas.wait_leader, 30)
        killed = await asyncio.to_thread(replicas.remove, leader, True)
        binder.takeover = (killed, 0.0)
        _, leading = await asyncio.to_thread(replicas.wait_leader, 120)
        binder.takeover = (killed, leading)
        result.takeover_seconds = round(leading - killed, 3)

    started = time.monotonic()
    tasks = []
    for i in range(pods):
        await asyncio.sleep(max(0.0, started + i / rate - time.monotonic()))
        if i == kill_after:
            takeover = asyncio.create_task(kill_leader())
        tasks.append(asyncio.create_task(create(i)))
    await asyncio.gather(*tasks)
    result.burst_seconds = round(time.monotonic() - started, 3)
    if takeover is not None:
        await takeover
    await asyncio.wait_for(binding, timeout=120)
    await _judge(kube, ns, created, result)
    return result


async def _judge(kube: Kube, ns: str, created: dict[str, dict], result: BurstResult) -> None:
    result.decided = sum(1 for p in created.values() if "homing.io/decision" in (p["metadata"].get("annotations") or {}))
    homes = Counter(h for h in map(o.home, created.values()) if h)
    result.promised = sum(homes.values())
    # Every burst pod stays (bound to its home): a home on two pods was promised twice.
    result.duplicate_promises = sorted(h for h, n in homes.items() if n > 1)
    wanted = set(result.bindings.values())

    async def written() -> bool:
        return wanted <= await memory_pool(kube, ns)

    try:
        await o.eventually(written, timeout=60, what="every binding in the PlacementMemory")
    except TimeoutError:
        pass
    result.missing_from_memory = sorted(wanted - await memory_pool(kube, ns))
