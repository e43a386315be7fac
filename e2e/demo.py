"""`make demo`: the tidal story on the real Volcano scheduler, in a few minutes.

A local control plane with Volcano and kwok, 16 fake 8-NPU nodes in two super-pods.
Training runs on 8 nodes, inference on 4, 4 are idle; inference peaks at 12 replicas and
preempts the training job; in the evening inference scales in to 8, and the training job
comes back on the 8 nodes that are free then. Which they are is the ReplicaSet's choice of
the replicas it deletes: nodes the job ran on hold its 30 GB image, the others pull it. The
same story runs twice, without and with homing (its home terms and its deletion-cost
marks), from the same dawn layout (the nodes each workload starts on), and prints where
each rank went, the image pulls it cost, and which of the two did better."""
from __future__ import annotations

import asyncio
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homing_e2e.cluster import VOLCANO_CONTROL_PLANE, build_binaries  # noqa: E402
from homing_e2e.imagecache import MODEL_BANDWIDTH_GBPS, pull_minutes  # noqa: E402
from homing_e2e.modules import pinned_dir  # noqa: E402
from homing_e2e.tidal import TidalCluster  # noqa: E402

IMAGES = {"llama-train:30g": 30.0, "qwen-serve:15g": 15.0}
BANDWIDTH_GBPS = MODEL_BANDWIDTH_GBPS
RANKS = 8
NODES = 16
VARIANTS = ("volcano", "volcano+homing")
# The tide: inference peaks at 12 replicas, which takes the 4 idle nodes and half the training
# job's (the job restarts whole), then scales in by 4 in the evening. Which 4 replicas go is the
# ReplicaSet's choice among the 8 the peak added, half of them on training's nodes, half on
# nodes that never held its image: a rank sent to one of those pulls the 30 GB image again.
# homing marks the replicas on the job's homes to go first (behaviour.md "Deletion cost").
PEAK, EVENING = 12, 8
def say(text: str = "") -> None:
    print(text, flush=True)


@dataclass(frozen=True)
class Layout:
    """Where the day starts: the training job's nodes and inference's first replicas' nodes."""

    training: frozenset[str]
    inference: frozenset[str]

    @staticmethod
    def drawn(seed: int) -> Layout:
        nodes = [f"npu-{i:03d}" for i in range(NODES)]
        rng = random.Random(seed)
        rng.shuffle(nodes)
        return Layout(frozenset(nodes[:RANKS]), frozenset(nodes[RANKS:RANKS + 4]))


async def story(variant: str, layout: Layout, quiet: bool = False) -> dict:
    """One day; returns where the ranks ran at dawn and after the night, and the recorder's summary."""
    c = await TidalCluster(variant, superpods=NODES // 8, images=IMAGES, bandwidth_gbps=BANDWIDTH_GBPS).start()
    try:
        await c.placed_on(set(layout.training), "llama/", RANKS, lambda: c.training_job("llama", RANKS, "llama-train:30g", sp_block=32))
        await c.placed_on(set(layout.inference), "qwen", 4, lambda: c.inference("qwen", 4, "qwen-serve:15g"))
        await c.settle()
        before = {k: v for k, v in c.recorder.last_node.items() if k.startswith("llama/")}
        if not quiet:
            say(f"   [{variant}] training runs on {len(set(before.values()))} nodes; inference scales 4 -> {PEAK} and preempts it")
        await c.scale("qwen", PEAK)
        await c.settle()
        if "homing" in variant:  # the evening begins once homing's marks are written (seconds)
            await c.marks_written()
        if not quiet:
            say(f"   [{variant}] evening: inference scales in to {EVENING}; Volcano restarts the training job")
        await c.scale("qwen", EVENING)
        await c.settle(quiet=5, until=lambda: sum(r.key.startswith("llama/") for r in c.recorder.replacements) >= RANKS)
        after = {k: v for k, v in c.recorder.last_node.items() if k.startswith("llama/")}
        return {"before": before, "after": after, "summary": c.recorder.summary()}
    finally:
        await c.stop()


def verdict(plain: dict, homing: dict) -> str:
    saved = plain["replacement_pull_minutes"] - homing["replacement_pull_minutes"]
    if saved > 0:
        return f"homing saved {saved:.0f} node-minutes of idle NPUs in one tide."
    if saved == 0 and plain["home"] < homing["home"]:
        return (f"homing saved no pull in this tide: without it {homing['home'] - plain['home']} more ranks moved, "
                "but only onto nodes that already held the image.")
    if saved == 0:
        return "homing saved nothing in this tide: both placed the ranks alike."
    return f"homing LOST {-saved:.0f} node-minutes to plain Volcano in this tide: a defect, please report it."


async def main() -> None:
    build_binaries(*VOLCANO_CONTROL_PLANE)
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    layout = Layout.drawn(seed)
    pull = pull_minutes(IMAGES["llama-train:30g"], BANDWIDTH_GBPS)
    volcano = pinned_dir("volcano", "volcano.sh/volcano").name.split("@")[-1]  # the version go.mod pins
    say(f"homing demo: Volcano {volcano} + kwok, {NODES} nodes x 8 NPUs, a 30 GB training image; dawn layout {seed}")
    runs = {variant: await story(variant, layout) for variant in VARIANTS}
    say()
    say(f"   {'rank':<12}{'Volcano: ran on -> back on':<34}{'Volcano + homing: ran on -> back on':<36}")
    plain, homing = runs["volcano"], runs["volcano+homing"]

    def move(was: str | None, now: str | None) -> str:
        return f"{was} -> {now} {'(home)' if was == now else '(moved)'}"

    for key in sorted(homing["before"], key=lambda k: int(k.rsplit("/", 1)[-1])):
        rank = key.split("/", 1)[1]
        say(f"   {rank:<12}{move(plain['before'].get(key), plain['after'].get(key)):<34}"
            f"{move(homing['before'][key], homing['after'].get(key)):<36}")
    say()
    for name, run in (("Volcano", plain), ("Volcano + homing", homing)):
        s = run["summary"]
        say(f"   {name:<18} re-placed {s['replacements']:>2}, home {s['home']:>2}, image pulls on re-placement "
            f"{s['replacement_pulls']:>2} = {s['replacement_pull_minutes']:.0f} node-minutes of NPUs waiting")
    say(f"\nModelled: {pull:.0f} min per {IMAGES['llama-train:30g']:.0f} GB pull at {BANDWIDTH_GBPS:g} Gbit/s; "
        f"{verdict(plain['summary'], homing['summary'])}\n"
        "(A moved rank pulls only where no earlier rank left the image: the nodes keep an LRU image cache.)")


if __name__ == "__main__":
    asyncio.run(main())
