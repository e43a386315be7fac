"""A gang between its pods keeps its homes claimed (issue 44, the restart hold; behaviour.md
"Claimed homes"), on the real API server with the operator as a process: Volcano restarts a
gang by deleting every pod and creating them again seconds later, and a gang admitted in that
gap was steered onto its homes (warm with its image) before. The operator here holds for 5 s
(tests/integration/conftest.py); the default is 60 s."""
from __future__ import annotations

import asyncio

from homing.config import Settings
from homing_e2e import objects as o


def kept_off(pod: dict) -> set[str]:
    """The nodes of the claimed term (NotIn, weight 100 and 60; keep-clear's NotIn weighs 5)."""
    keep_clear = Settings().weights.keep_clear
    return {v for t in o.terms(pod) if t["weight"] != keep_clear
            for e in t["preference"]["matchExpressions"] if e["operator"] == "NotIn" for v in e["values"]}


async def _ran(kube, ns: str, owner: dict, name: str, rank: str, node: str) -> None:
    await o.pod(kube, ns, name, owner=owner, annotations={"volcano.sh/task-index": rank})
    await o.bind(kube, ns, name, node)
    await o.running(kube, ns, name)


async def _remembered(kube, ns: str, ranks: int) -> bool:
    return any(((m.get("status") or {}).get("summary") or {}).get("ranks") == ranks for m in await o.written_memories(kube, ns))


async def test_a_gang_deleted_whole_keeps_its_homes_claimed_until_the_hold_ends(kube, operator, ns):
    homes = [await o.node(kube, f"a{i}-{ns}") for i in range(2)]
    await o.node(kube, f"free-{ns}")
    gang = await o.owner_stand_in(kube, ns, "train-a")
    for rank, node in enumerate(homes):
        await _ran(kube, ns, gang, f"train-a-{rank}", str(rank), node)
    # the operator has seen both run: its leader wrote them (a fixed second was not enough on a busy machine)
    await o.eventually(lambda: _remembered(kube, ns, 2), what="both ranks in the gang's PlacementMemory")
    for rank in range(2):
        await o.delete_pod(kube, ns, f"train-a-{rank}")  # the restart: every pod goes, none is back yet

    # another image: taking a held home would cost it a pull (one of the gang's image may take them)
    other = await o.owner_stand_in(kube, ns, "train-b")

    async def operator_sees_the_gang_gone() -> bool:
        """The pods are gone from the API server before the operator's watch says so; a pod
        admitted between the two finds a rank still running there, and the hold is not yet due
        (CI, on a busy machine, once admitted one in that gap). The hold starts when the
        operator sees the last pod go: a dry-run pod of another image shows when."""
        probe = await o.pod(kube, ns, "probe", owner=other, annotations={"volcano.sh/task-index": "0"},
                            image="registry.invalid/other:20g", dry_run=True)
        return set(homes) <= kept_off(probe)

    await o.eventually(operator_sees_the_gang_gone, timeout=30, what="both homes held once the operator saw the gang go")
    in_the_gap = await o.pod(kube, ns, "train-b-0", owner=other, annotations={"volcano.sh/task-index": "0"},
                             image="registry.invalid/other:20g")
    assert set(homes) <= kept_off(in_the_gap), f"admitted in the gap, it keeps off the gang's homes: {o.terms(in_the_gap)}"
    same = await o.owner_stand_in(kube, ns, "train-s")
    same_image = await o.pod(kube, ns, "train-s-0", owner=same, annotations={"volcano.sh/task-index": "0"})
    assert not set(homes) & kept_off(same_image), f"one of the gang's image may take them: {o.terms(same_image)}"

    await asyncio.sleep(6)  # past the 5 s hold: the gang never came back
    late = await o.owner_stand_in(kube, ns, "train-c")
    after = await o.pod(kube, ns, "train-c-0", owner=late, annotations={"volcano.sh/task-index": "0"},
                        image="registry.invalid/other:20g")
    assert not set(homes) & kept_off(after), f"after the hold nothing keeps it off them: {o.terms(after)}"
