"""`make demo`: the tidal story on the real Volcano scheduler, in a few minutes.

A local control plane with Volcano and kwok, 16 fake 8-NPU nodes in two super-pods.
Training runs; inference scales out and preempts it; inference scales in at night and
the training job comes back. The same story runs twice, without and with homing, and
prints where each rank went and the image pulls it cost."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from homing_e2e.cluster import build_binaries  # noqa: E402
from homing_e2e.tidal import TidalCluster, module_dir  # noqa: E402

IMAGES = {"llama-train:30g": 30.0, "qwen-serve:15g": 15.0}
BANDWIDTH_GBPS = 1.0
RANKS = 8


def say(text: str = "") -> None:
    print(text, flush=True)


async def story(variant: str) -> tuple[dict[str, str], dict[str, str], dict]:
    c = await TidalCluster(variant, superpods=2, images=IMAGES, bandwidth_gbps=BANDWIDTH_GBPS).start()
    try:
        await c.training_job("llama", RANKS, "llama-train:30g", sp_block=32)
        await c.inference("qwen", 4, "qwen-serve:15g")
        await c.settle()
        before = {k: v for k, v in c.recorder.last_node.items() if k.startswith("llama/")}
        say(f"   [{variant}] training runs on {len(set(before.values()))} nodes; inference scales 4 -> 12 and preempts it")
        await c.scale("qwen", 12)
        await c.settle()
        say(f"   [{variant}] night: inference scales in to 4; Volcano restarts the training job")
        await c.scale("qwen", 4)
        await c.settle(quiet=5)
        after = {k: v for k, v in c.recorder.last_node.items() if k.startswith("llama/")}
        return before, after, c.recorder.summary()
    finally:
        await c.stop()


async def main() -> None:
    build_binaries()
    pull = IMAGES["llama-train:30g"] * 8 / BANDWIDTH_GBPS / 60
    volcano = module_dir("volcano", "volcano.sh/volcano").name.split("@")[-1]  # the version go.mod pins
    say(f"homing demo: Volcano {volcano} + kwok, 16 nodes x 8 NPUs, a 30 GB training image")
    runs = {}
    for variant in ("volcano", "volcano+homing"):
        runs[variant] = await story(variant)
    say()
    say(f"   {'rank':<12}{'Volcano: ran on -> back on':<34}{'Volcano + homing: ran on -> back on':<36}")
    plain_before, plain_after, plain = runs["volcano"]
    before, after, homing = runs["volcano+homing"]

    def move(was: str | None, now: str | None) -> str:
        return f"{was} -> {now} {'(home)' if was == now else '(moved)'}"

    for key in sorted(before, key=lambda k: int(k.rsplit("/", 1)[-1])):
        rank = key.split("/", 1)[1]
        say(f"   {rank:<12}{move(plain_before.get(key), plain_after.get(key)):<34}{move(before[key], after.get(key)):<36}")
    say()
    for name, s in (("Volcano", plain), ("Volcano + homing", homing)):
        say(f"   {name:<18} re-placed {s['replacements']:>2}, home {s['home']:>2}, image pulls on re-placement "
            f"{s['replacement_pulls']:>2} = {s['replacement_pull_minutes']:.0f} node-minutes of NPUs waiting")
    saved = plain["replacement_pull_minutes"] - homing["replacement_pull_minutes"]
    say(f"\nModelled: {pull:.0f} min per {IMAGES['llama-train:30g']:.0f} GB pull at {BANDWIDTH_GBPS:g} Gbit/s; "
        f"homing saved {saved:.0f} node-minutes of idle NPUs in one tide.\n"
        "(A moved rank pulls only where no earlier rank left the image: the nodes keep an LRU image cache.)")


if __name__ == "__main__":
    asyncio.run(main())
