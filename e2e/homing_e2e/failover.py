"""The failover scenario, shared by tests/integration/test_replicas_failover.py
(which asserts) and bench/takeover.py (which records): a rankless workload with a
remembered pool of homes, then a burst of pods created at a steady rate while the
leading replica is killed; a binder stands in for a scheduler that honours the promise
(a pod with a home binds there, one without binds to a spare node), so every binding is
either a remembered home or a node the memory must learn during the takeover."""
from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from homing.kube.client import Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION
from homing.placementmemory.decode import merge, read_object
from homing_e2e import objects as o
from homing_e2e.replicaset import OperatorReplicas

APP_LABEL = "homing-e2e/app"
SCOPE_LABEL = "homing.io/ha-e2e"  # its own opt-in label: the test session's operator stays out of the way


async def replica_set(kube: Kube, kubeconfig: Path, name: str, env: dict[str, str] | None = None) -> tuple[OperatorReplicas, str]:
    """An opted-in namespace for the pods, the replicas' own namespace for Leases and the
    Secret, and the replicas (none started yet)."""
    system = await o.namespace(kube, f"{name}-sys", opted_in=False)
    ns = f"{name}-pods"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": {SCOPE_LABEL: "true"}}})
    await o.eventually(lambda: kube.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default"), what="default SA")
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    scope = {
        "HOMING_SCOPE__NAMESPACE_LABEL": SCOPE_LABEL,
        "HOMING_SCOPE__POD_LABEL": SCOPE_LABEL,
        "HOMING_WEBHOOK__CONFIGURATION_NAME": name,
        # one install: the Leases in its own namespace, client-go's timings
        "HOMING_REPLICAS__NAMESPACE": system,
        "HOMING_REPLICAS__LEASE_NAME": "homing-leader",
        "HOMING_REPLICAS__LEASE_SECONDS": "15",
        "HOMING_REPLICAS__RENEW_SECONDS": "10",
        "HOMING_REPLICAS__RETRY_SECONDS": "2",
        "HOMING_REPLICAS__HANDOVER_GRACE_SECONDS": "10",
    }
    return OperatorReplicas(kubeconfig, workdir, system, {**scope, **(env or {})}), ns


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
    standby_writes: float = -1  # PlacementMemory writes the standby made before the kill (must be none)
    leader_writes: float = -1  # ... and the leader's, for comparison
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
        "spec": o.bound_by_the_test({"containers": [o.container()], "automountServiceAccountToken": False,
                                     "terminationGracePeriodSeconds": 0}),
    }


async def memory_pool(kube: Kube, ns: str) -> set[str]:
    got = await kube.request("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}")
    items = [i for i in got.get("items") or [] if i.get("status")]  # created, then written
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


@dataclass
class Workload:
    owner: dict
    homes: list[str]
    spare: list[str]
    result: BurstResult


async def remembered_workload(
    kube: Kube, replicas: OperatorReplicas, ns: str, name: str, homes: int, spare: int, start: bool = True
) -> Workload:
    """Two replicas up (unless something else starts them), `homes` nodes remembered as the
    workload's pool, `spare` more nodes."""
    if start:
        replicas.add()
        replicas.add()
    home_nodes = await nodes(kube, f"{name}-home", homes)
    spare_nodes = await nodes(kube, f"{name}-spare", spare)
    owner = await o.owner_stand_in(kube, ns, "web")
    result = BurstResult()
    await remember(kube, ns, owner, home_nodes, result)
    return Workload(owner, home_nodes, spare_nodes, result)


@contextlib.asynccontextmanager
async def remembered(kube: Kube, kubeconfig: Path, name: str, homes: int,
                     spare: int) -> AsyncIterator[tuple[OperatorReplicas, str, Workload]]:
    """Replicas and a remembered workload for one scenario; the replicas stop at the end."""
    replicas, ns = await replica_set(kube, kubeconfig, name)
    try:
        yield replicas, ns, await remembered_workload(kube, replicas, ns, name, homes, spare)
    finally:
        replicas.stop()


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


class Creator:
    """Creates burst pods at a steady rate; a failed creation is counted, never raised."""

    def __init__(self, kube: Kube, ns: str, owner: dict, result: BurstResult) -> None:
        self.kube, self.ns, self.owner, self.result = kube, ns, owner, result
        self.created: dict[str, dict] = {}
        self.slots = asyncio.Semaphore(16)

    async def one(self, i: int) -> None:
        name = f"burst-{i}"
        async with self.slots:
            try:
                body = pod_body(name, self.owner, "burst")
                self.created[name] = await self.kube.request("POST", f"/api/v1/namespaces/{self.ns}/pods", body=body)
            except Exception:
                self.result.failed_creations += 1

    async def run(self, rate: float, count: int | None = None, until: asyncio.Event | None = None,
                  at: dict[int, asyncio.Future | None] | None = None) -> int:
        """Pods 0, 1, ... at `rate` per second, `count` of them or until `until` is set."""
        started, tasks, i = time.monotonic(), [], 0
        while (count is None or i < count) and not (until is not None and until.is_set()):
            await asyncio.sleep(max(0.0, started + i / rate - time.monotonic()))
            tasks.append(asyncio.create_task(self.one(i)))
            i += 1
        await asyncio.gather(*tasks)
        self.result.pods = i
        self.result.burst_seconds = round(time.monotonic() - started, 3)
        return i


async def burst_with_leader_killed(
    kube: Kube, replicas: OperatorReplicas, ns: str, owner: dict, homes: list[str], spare: list[str],
    pods: int = 300, rate: float = 20.0, kill_after: int = 100, result: BurstResult | None = None,
) -> BurstResult:
    result = result or BurstResult()
    result.killed_after = kill_after
    binder = Binder(kube, ns, set(homes), spare, result)
    binding = asyncio.create_task(binder.run(pods))
    creator = Creator(kube, ns, owner, result)

    async def kill_leader() -> None:
        await asyncio.sleep(kill_after / rate)
        leader, _ = await asyncio.to_thread(replicas.wait_leader, 30)
        standbys = [p for p in replicas.processes if p is not leader]
        result.standby_writes = sum([await asyncio.to_thread(p.metric, "homing_store_writes_total") for p in standbys])
        result.leader_writes = await asyncio.to_thread(leader.metric, "homing_store_writes_total")
        killed = await asyncio.to_thread(replicas.remove, leader, True)
        binder.takeover = (killed, 0.0)
        _, leading = await asyncio.to_thread(replicas.wait_leader, 120)
        binder.takeover = (killed, leading)
        result.takeover_seconds = round(leading - killed, 3)

    takeover = asyncio.create_task(kill_leader())
    await creator.run(rate, count=pods)
    await takeover
    await asyncio.wait_for(binding, timeout=120)
    await _judge(kube, ns, creator.created, result)
    return result


async def replace_each_process(replicas: OperatorReplicas) -> float | None:
    """What a RollingUpdate (maxSurge 1, maxUnavailable 0) does to each old replica in turn:
    a new one starts and gets ready, then the old one leaves (endpoint removed, preStop
    pause, SIGTERM). Returns the longest leader handover (SIGTERM -> a new leader)."""
    handovers = []
    for old in list(replicas.processes):
        await asyncio.to_thread(replicas.add)
        was_leading = old.metric("homing_leader") == 1.0
        gone = await asyncio.to_thread(replicas.remove, old)
        if was_leading:
            _, leading = await asyncio.to_thread(replicas.wait_leader, 60)
            handovers.append(round(leading - gone, 3))
    return max(handovers) if handovers else None


async def rolling_upgrade(
    kube: Kube, replicas: OperatorReplicas, ns: str, owner: dict, homes: list[str], spare: list[str],
    rate: float = 10.0, result: BurstResult | None = None,
    replace: Callable[[], Awaitable[float | None]] | None = None,
) -> BurstResult:
    """Every replica replaced (`replace`, by default replace_each_process) while pods keep coming."""
    result = result or BurstResult()
    creator, done = Creator(kube, ns, owner, result), asyncio.Event()
    binder = Binder(kube, ns, set(homes), spare, result)
    creating = asyncio.create_task(creator.run(rate, until=done))
    result.takeover_seconds = await (replace or (lambda: replace_each_process(replicas)))()
    await asyncio.sleep(2)
    done.set()
    pods = await creating
    await asyncio.wait_for(binder.run(pods), timeout=120)
    await _judge(kube, ns, creator.created, result)
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
