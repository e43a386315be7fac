"""The reduced tidal tests' shared verdict on a gang's return, whichever scheduler placed it."""
from __future__ import annotations

from homing_e2e import objects as o


async def assert_free_homes_taken(c, training: list, homes: dict[str, str], key_prefix: str) -> None:
    """Every rank whose home was free when the scheduler bound it went home, and only those
    stayed away whose home another pod still held (or had left within the scheduler's
    cycle); no rank took another rank's home, so none was sent away; once running, the
    ranks pulled no more images than the homes held. `training`: the recorder's
    re-placements of the gang; `homes`: where each rank ran before."""
    free = [r for r in training if r.feasible]
    missed = [(r.key, r.home, r.node, r.reason) for r in free if r.outcome != "home"]
    assert not missed, missed
    home = [r for r in training if r.outcome == "home"]
    assert len(home) == len(free), [(r.key, r.blocked) for r in training if not r.feasible]
    assert not {r.node for r in training if r.outcome != "home"} & set(homes.values()), \
        "a rank that could not go home took another rank's home"
    held = len(training) - len(free)

    async def started():
        return all(p.started for p in c.recorder.pods.values() if p.key.startswith(key_prefix) and not p.leaving)

    await o.eventually(started, what="the training ranks running")
    assert c.recorder.replacement_pulls <= held, (c.recorder.replacement_pulls, held)
