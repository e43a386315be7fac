"""Sibling homes (the keep-clear term's list): the nearest ranks' homes, walked rank by rank
or, once a memory is asked twice unchanged, run by run. Both walks must give the same homes,
and a changed memory must never be answered from a stale view."""
from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from homing.engine.memory.entries import OwnerMemory, RankEntry
from homing.engine.memory.siblings import RunsKept, _homes_by_run, _nearest, runs_of, sibling_homes
from homing.engine.model import OwnerRef

OWNER = OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train", namespace="ai", uid="u1")

ranks = st.dictionaries(
    st.builds(lambda spec, i: f"{spec}/{i}", st.sampled_from(["worker", "ps"]), st.integers(0, 40)),
    st.sampled_from([f"n{i}" for i in range(12)]),
    min_size=1, max_size=60,
)


def memory(homes: dict[str, str]) -> OwnerMemory:
    return OwnerMemory(owner=OWNER, last_seen=0.0, ranks={k: RankEntry(node=n, bound_at=0.0) for k, n in homes.items()})


def first_met(order) -> list[str]:
    """Homes in the order a walk meets them, each once."""
    return list(dict.fromkeys(node for homes in order for node in homes))


@hsettings(max_examples=300, deadline=None)
@given(ranks, st.integers(-5, 45))
def test_runs_meet_the_homes_in_the_rank_walks_order(homes, index):
    mem = memory(homes)
    by_rank = (tuple(mem.ranks[k].node for k in mem.keys_by_index[i]) for i in _nearest(mem.keys_by_index, index))
    assert first_met(_homes_by_run(runs_of(mem), index)) == first_met(by_rank)


@hsettings(max_examples=300, deadline=None)
@given(ranks, st.integers(-5, 45), st.sampled_from([None, "n0", "n3"]), st.integers(1, 8))
def test_the_second_question_gives_the_first_answer(homes, index, own, limit):
    mem, kept = memory(homes), RunsKept()
    first = sibling_homes(mem, index, own, limit, kept)  # changed since last asked: rank by rank
    second = sibling_homes(mem, index, own, limit, kept)  # unchanged: run by run
    assert first == second
    assert own not in first[0] and len(first[0]) <= limit


@hsettings(max_examples=200, deadline=None)
@given(ranks, st.integers(0, 40), st.sampled_from([f"n{i}" for i in range(12, 16)]), st.integers(1, 6))
def test_a_moved_home_is_never_answered_from_the_old_runs(homes, index, new_home, limit):
    mem, kept = memory(homes), RunsKept()
    sibling_homes(mem, index, None, limit, kept)
    sibling_homes(mem, index, None, limit, kept)  # runs built
    key = next(iter(homes))
    entry = mem.ranks[key]
    mem.move_home(entry.node, new_home)  # as engine/memory/changes.py moves a rank
    entry.node = new_home
    fresh = memory({k: e.node for k, e in mem.ranks.items()})
    for _ in range(2):  # the walk after the change, then the runs rebuilt
        assert sibling_homes(mem, index, None, limit, kept) == sibling_homes(fresh, index, None, limit)


def test_eight_ranks_a_node_are_walked_as_one_run_each():
    mem = memory({f"worker/{r}": f"n{r // 8:03d}" for r in range(4096)})
    runs = runs_of(mem)
    assert len(runs.lo) == 512 and runs.homes[1] == ("n001",) and (runs.lo[1], runs.hi[1]) == (8, 15)
    near, cut = sibling_homes(mem, 2048, "n256", 4)
    assert cut and near == ("n254", "n255", "n257", "n258")


def test_runs_are_kept_for_a_few_owners_only():
    """A cache, bounded: the owners asked longest ago give their runs up, and still get the
    same homes (walked again)."""
    kept = RunsKept(keep=2)
    owners = [memory({f"worker/{r}": f"n{(r + k) // 4}" for r in range(40)}) for k in range(3)]
    answers = []
    for mem in owners:
        answers.append(sibling_homes(mem, 20, None, 3, kept))
        assert sibling_homes(mem, 20, None, 3, kept) == answers[-1]  # the second question builds its runs
    assert [m.sibling_runs is not None for m in owners] == [False, True, True]
    assert sibling_homes(owners[0], 20, None, 3, kept) == answers[0]


def test_without_a_cache_every_walk_goes_rank_by_rank():
    mem = memory({f"worker/{r}": f"n{r // 8:03d}" for r in range(4096)})
    assert sibling_homes(mem, 2048, "n256", 4) == sibling_homes(mem, 2048, "n256", 4)
    assert mem.sibling_runs is None
