"""`make demo`: a local control plane, the operator, and one tidal night told in a
minute: training runs, inference takes its nodes, inference leaves, training returns.

The pods are bound by a stand-in scheduler that ranks nodes the way kube-scheduler's
NodeAffinity plugin does (the tidal issue moves this story onto Volcano)."""
from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homing.operator.kube import Kube  # noqa: E402
from homing_e2e import objects as o  # noqa: E402
from homing_e2e.binder import choose, schedule  # noqa: E402
from homing_e2e.cluster import BIN_DIR, LocalControlPlane, build_binaries  # noqa: E402
from homing_e2e.fake_kubelet import FakeKubelet  # noqa: E402
from homing_e2e.operator_process import OperatorProcess  # noqa: E402

IMAGE_GB = 30
BANDWIDTH_GBPS = 1.0  # per node, what a shared registry gives each puller under load
PULL_MINUTES = IMAGE_GB * 8 / BANDWIDTH_GBPS / 60
RANKS = 4


def say(text: str = "") -> None:
    print(text, flush=True)


async def story(kube: Kube) -> None:
    ns = await o.namespace(kube, "tidal-demo")
    nodes: dict[str, dict[str, str]] = {}
    for i in range(6):
        name = f"npu-node-{i}"
        await o.node(kube, name)
        nodes[name] = {"kubernetes.io/hostname": name}
    owner = await o.owner_stand_in(kube, ns, "llama-train")
    warm: set[str] = set()
    rng = random.Random(2026)

    say(f"1. Training job llama-train starts: {RANKS} ranks, a {IMAGE_GB} GB image each.")
    first: dict[int, str] = {}
    for r in range(RANKS):
        await o.pod(kube, ns, f"llama-train-{r}", owner=owner, annotations={"hccl/rankIndex": str(r)}, npus=8)
        first[r] = await schedule(kube, ns, f"llama-train-{r}", nodes, set(first.values()), rng)
        await o.running(kube, ns, f"llama-train-{r}")
        say(f"   rank {r} -> {first[r]} (image pulled: {PULL_MINUTES:.0f} min)")
    warm |= set(first.values())

    say("2. Morning: inference scales out and preempts training; the job is evicted as a gang.")
    for r in range(RANKS):
        await o.delete_pod(kube, ns, f"llama-train-{r}")
    infer_owner = await o.owner_stand_in(kube, ns, "qwen-infer")
    for i in range(2):
        await o.pod(kube, ns, f"qwen-infer-{i}", owner=infer_owner, npus=8)
        await o.bind(kube, ns, f"qwen-infer-{i}", first[i])
        await o.running(kube, ns, f"qwen-infer-{i}")
        say(f"   qwen-infer-{i} -> {first[i]}")

    say("3. Night: inference scales in; training is re-created.")
    for i in range(2):
        await o.delete_pod(kube, ns, f"qwen-infer-{i}")
    pulls = blind_pulls = 0
    taken: set[str] = set()
    blind_taken: set[str] = set()
    blind_rng = random.Random(7)
    say(f"   {'rank':<6}{'ran on':<13}{'homing says':<13}{'bound to':<13}{'start':<24}without homing")
    for r in range(RANKS):
        pod = await o.pod(kube, ns, f"llama-train-{r}", owner=owner, annotations={"hccl/rankIndex": str(r)}, npus=8)
        blind = choose({"spec": {}}, nodes, blind_taken, blind_rng)  # the same pod, no terms
        blind_taken.add(blind)
        landed = await schedule(kube, ns, f"llama-train-{r}", nodes, taken, rng)
        taken.add(landed)
        hit = landed in warm
        pulls += 0 if hit else 1
        blind_pulls += 0 if blind in warm else 1
        start = "seconds (image cached)" if hit else f"{PULL_MINUTES:.0f} min pull"
        blind_start = "cached" if blind in warm else f"{PULL_MINUTES:.0f} min pull"
        say(f"   {r:<6}{first[r]:<13}{o.home(pod) or '-':<13}{landed:<13}{start:<24}{blind} ({blind_start})")

    mems = await o.placement_memories(kube, ns)
    say()
    say(f"Modelled: {IMAGE_GB} GB at {BANDWIDTH_GBPS:g} Gbit/s = {PULL_MINUTES:.0f} min per pull;")
    say(f"with homing {pulls} pulls, without {blind_pulls}: {(blind_pulls - pulls) * PULL_MINUTES:.0f} min of idle")
    say(f"accelerators saved in this one restart of {RANKS} ranks (a real job has hundreds).")
    say(f"PlacementMemory objects in {ns}: {', '.join(m['metadata']['name'] for m in mems)}")


async def main() -> None:
    build_binaries()
    cp = LocalControlPlane().start()
    op = OperatorProcess(cp.kubeconfig, Path(tempfile.mkdtemp(prefix="homing-demo-")))
    try:
        kube = await Kube.connect(str(cp.kubeconfig))
        await o.install_crd(kube)
        op.start()
        kubelet = FakeKubelet(kube)
        kubelet.start()
        try:
            await story(kube)
            await asyncio.sleep(1.5)  # one write interval: the memory is on the API server
            say("\n$ kubectl get pmem -A")
            out = subprocess.run([str(BIN_DIR / "kubectl"), "--kubeconfig", str(cp.kubeconfig), "get", "pmem", "-A"], capture_output=True, text=True)
            say(out.stdout + out.stderr)
        finally:
            await kubelet.stop()
            await kube.close()
    finally:
        op.stop()
        cp.stop()
        say(f"operator log: {op.log_path}")


if __name__ == "__main__":
    asyncio.run(main())
