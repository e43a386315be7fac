"""The tidal benchmark's recorder judges each re-placement itself; its rules decide the
published numbers, so they are checked here on synthetic watch events (no cluster)."""
from __future__ import annotations

import time

import pytest

from homing_e2e.imagecache import ImageCache
from homing_e2e.tidal import NPU, SUPERPOD, Recorder, gang_creation_spread, inversions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(time, "monotonic", c)
    return c


def node(name: str, ready: bool = True, superpod: str = "sp0") -> dict:
    return {"metadata": {"name": name, "labels": {SUPERPOD: superpod}},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}, "spec": {}}


def rank_pod(uid: str, index: int, node_name: str | None = None, deleting: bool = False) -> dict:
    meta = {"uid": uid, "name": f"train-{uid}",
            "annotations": {"volcano.sh/job-name": "train", "volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(index)}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node_name, "containers": [{"image": "train:30g", "resources": {"limits": {NPU: "8"}}}]},
            "status": {"phase": "Running" if node_name else "Pending"}}


def replica(uid: str, node_name: str | None = None) -> dict:
    return {"metadata": {"uid": uid, "name": f"serve-{uid}", "labels": {"app": "serve"}},
            "spec": {"nodeName": node_name, "containers": [{"image": "serve:15g", "resources": {"limits": {NPU: "8"}}}]},
            "status": {"phase": "Running" if node_name else "Pending"}}


@pytest.fixture
def rec(clock) -> Recorder:
    r = Recorder(ImageCache(120, 1.0), {"train:30g": 30.0, "serve:15g": 15.0})
    for name, sp in (("a", "sp0"), ("b", "sp0"), ("c", "sp1"), ("d", "sp1")):
        r.node_event("ADDED", node(name, superpod=sp))
    return r


def first_run_then_gone(rec: Recorder, clock: Clock) -> None:
    """Rank 0 ran on node a, then its pod went away (the job restarted)."""
    rec.pod_event("ADDED", rank_pod("p1", 0, "a"))
    clock.now += 10
    rec.pod_event("DELETED", rank_pod("p1", 0, "a"))
    clock.now += 10


@pytest.mark.parametrize("target, outcome", [("a", "home"), ("b", "domain"), ("c", "elsewhere")])
def test_outcome_by_where_the_rank_landed(rec, clock, target, outcome):
    first_run_then_gone(rec, clock)
    rec.pod_event("MODIFIED", rank_pod("p2", 0, target))
    [r] = rec.replacements
    assert (r.home, r.node, r.outcome) == ("a", target, outcome)
    assert r.feasible and r.blocked == ""  # home a had been free for 10 s


def test_first_placement_is_not_a_replacement(rec, clock):
    rec.pod_event("ADDED", rank_pod("p1", 0, "a"))
    assert rec.replacements == []


@pytest.mark.parametrize("setup, blocked", [
    ("held", "held-by-pool"),
    ("leaving", "held-by-ranked"),
    ("not-ready", "not-ready"),
    ("gone", "gone"),
    ("just-freed", "just-freed"),
])
def test_why_home_was_not_feasible(rec, clock, setup, blocked):
    first_run_then_gone(rec, clock)
    if setup == "held":
        rec.pod_event("ADDED", replica("s1", "a"))
    elif setup == "leaving":  # another rank's pod being deleted still holds the node
        rec.pod_event("ADDED", rank_pod("q1", 5, "a"))
        rec.pod_event("MODIFIED", rank_pod("q1", 5, "a", deleting=True))
    elif setup == "not-ready":
        rec.node_event("MODIFIED", node("a", ready=False))
    elif setup == "gone":
        rec.node_event("DELETED", node("a"))
    elif setup == "just-freed":
        rec.pod_event("ADDED", replica("s1", "a"))
        clock.now += 5
        rec.pod_event("DELETED", replica("s1", "a"))
        clock.now += rec.settle_time / 2  # Volcano's snapshot may still show it busy
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))
    [r] = [x for x in rec.replacements if x.key == "train/worker/0"]
    assert (r.feasible, r.blocked) == (False, blocked)


def test_home_given_away_in_the_same_cycle_was_not_feasible(rec, clock):
    first_run_then_gone(rec, clock)
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))  # looks like a feasible miss...
    assert rec.replacements[0].feasible
    clock.now += rec.settle_time / 2
    rec.pod_event("ADDED", replica("s1", "a"))  # ...but the same session gave a away
    r = rec.replacements[0]
    assert (r.feasible, r.blocked) == (False, "same-cycle")
    assert rec.summary()["miss_details"] == []


def test_home_taken_a_cycle_later_stays_a_feasible_miss(rec, clock):
    first_run_then_gone(rec, clock)
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))
    clock.now += rec.settle_time * 2
    rec.pod_event("ADDED", replica("s1", "a"))
    r = rec.replacements[0]
    assert r.feasible and r.blocked == ""
    assert [m["key"] for m in rec.summary()["miss_details"]] == ["train/worker/0"]


def test_pool_replica_home_is_any_node_the_pool_ran_on_and_no_replica_holds(rec, clock):
    rec.pod_event("ADDED", replica("s1", "a"))
    rec.pod_event("ADDED", replica("s2", "b"))
    clock.now += 10
    rec.pod_event("DELETED", replica("s1", "a"))  # scale in: a is a free home of the pool
    clock.now += 10
    rec.pod_event("ADDED", replica("s3", "c"))  # scale out went elsewhere although a was free
    clock.now += rec.settle_time * 2
    rec.pod_event("ADDED", replica("s4", "a"))  # a later cycle: home
    summary = rec.summary()
    assert (summary["replacements"], summary["home"], summary["feasible"]) == (2, 1, 2)
    assert summary["home_rate"] == 0.5 and summary["feasible_home_rate"] == 0.5
    assert summary["by_phase"]["dawn"] == {"replacements": 2, "home": 1, "feasible": 2}


@pytest.mark.parametrize("holder_leaves, counted", [(True, 1), (False, 0)])
def test_a_home_held_only_until_later_in_the_step_is_told_apart(rec, clock, holder_leaves, counted):
    """Night scale-in: a replica on a rank's home that the ReplicaSet deletes seconds after
    the rank bound elsewhere held it only for a while; one it keeps held it for good."""
    first_run_then_gone(rec, clock)
    rec.pod_event("ADDED", replica("s1", "a"))
    rec.phase = "night"
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))
    clock.now += 3
    if holder_leaves:
        rec.pod_event("DELETED", replica("s1", "a"))
    rec.phase = "faults"  # deleted after the step: not the same scale-in
    rec.pod_event("DELETED", replica("s1", "a"))
    row = rec.summary()["by_phase"]["night"]
    assert row["blocked:held-by-pool"] == 1
    assert row.get("held-then-freed", 0) == counted


def test_waits_are_told_per_step_of_the_day(rec: Recorder, clock: Clock):
    """create->scheduled by step: where in the day a variant is slower than another."""
    for uid, wait in (("p1", 0.5), ("p2", 1.5)):
        rec.pod_event("ADDED", rank_pod(uid, int(uid[1:])))
        clock.now += wait
        rec.pod_event("MODIFIED", rank_pod(uid, int(uid[1:]), "a" if uid == "p1" else "b"))
    rec.phase = "night"
    rec.pod_event("ADDED", replica("r1"))
    clock.now += 3.0
    rec.pod_event("MODIFIED", replica("r1", "c"))
    assert rec.summary()["create_to_scheduled_p50_by_phase"] == {"dawn": [2, 1.0], "night": [1, 3.0]}
    assert rec.summary()["create_to_scheduled_p50_by_kind"] == {"rank": [2, 1.0], "replica": [1, 3.0]}


def test_a_steps_replicas_are_timed_first_to_last_creation(rec: Recorder, clock: Clock):
    """A ReplicaSet creates a wave in batches; ranks and bindings are not counted."""
    rec.phase = "morning"
    for uid, gap in (("r1", 0.0), ("r2", 0.5), ("r3", 2.0)):
        clock.now += gap
        rec.pod_event("ADDED", replica(uid))
    rec.pod_event("ADDED", rank_pod("p1", 0))
    clock.now += 4.0
    rec.pod_event("MODIFIED", replica("r1", "a"))
    rec.phase = "night"
    rec.pod_event("ADDED", replica("r4"))
    assert rec.summary()["replica_creation_span_by_phase"] == {"morning": [3, 2.5], "night": [1, 0.0]}


@pytest.mark.parametrize("seen, expected", [
    ({}, {}),
    ({"train": [0.0]}, {"creations": 1, "p50": 0.0, "max": 0.0}),
    ({"train": [0.0, 0.4, 1.2]}, {"creations": 1, "p50": 1.2, "max": 1.2}),
    # a restart 30 s later is a second creation; a second job a third
    ({"train": [30.0, 30.5, 0.0, 0.2], "other": [3.0, 5.0]}, {"creations": 3, "p50": 0.5, "max": 2.0}),
])
def test_a_gangs_creation_spread_is_first_to_last_pod_of_each_creation(seen, expected):
    """How long a gang took to exist: it cannot be placed before its last pod is admitted."""
    assert gang_creation_spread(seen) == expected


@pytest.mark.parametrize("warm_node, cold", [("free", 0), ("held", 1), ("not-ready", 1), ("just-freed", 1)])
def test_a_pull_is_cold_when_no_node_holding_the_image_had_room(rec, clock, warm_node, cold):
    """A re-placement that pulled although node a (its image cached there) had room could
    have been spared the pull; with a busy, down or just freed, no placement could."""
    first_run_then_gone(rec, clock)  # rank 0 ran on a: a holds train's image
    if warm_node == "held":
        rec.pod_event("ADDED", replica("s1", "a"))
    elif warm_node == "not-ready":
        rec.node_event("MODIFIED", node("a", ready=False))
    elif warm_node == "just-freed":  # the scheduler's snapshot may still show a busy
        rec.pod_event("ADDED", replica("s1", "a"))
        clock.now += 5
        rec.pod_event("DELETED", replica("s1", "a"))
        clock.now += rec.settle_time / 2
    rec.phase = "faults"
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))  # binds and runs on c: a pull
    summary = rec.summary()
    assert summary["replacement_pulls"] == 1
    assert summary["cold_replacement_pulls"] == cold
    assert summary["cold_replacement_pull_minutes"] == (4.0 if cold else 0.0)  # 30 GB at 1 Gb/s
    assert summary["cold_at_bind_replacement_pulls"] == cold  # nothing bound after it: the two counts agree
    assert summary["pulls_by_phase"]["faults"].get("cold", 0) == cold


@pytest.mark.parametrize("later, cold", [(0.5, 1), (2.0, 0)])
def test_a_warm_node_taken_in_the_same_cycle_leaves_the_pull_cold(rec, clock, later, cold):
    """Node a looked free and warm when rank 0 bound to c, but a replica bound to a in the
    same session (within settle_time): the scheduler had given it away already."""
    first_run_then_gone(rec, clock)
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))  # pulls on c
    clock.now += rec.settle_time * later
    rec.pod_event("ADDED", replica("s1", "a"))
    summary = rec.summary()
    assert (summary["replacement_pulls"], summary["cold_replacement_pulls"]) == (1, cold)
    assert summary["cold_at_bind_replacement_pulls"] == 0  # as it bound, a was free and warm
    [details] = summary["warm_pull_details"]
    assert (details["warm_at_bind"], details["warm_after_the_cycle"]) == (["a"], [] if cold else ["a"])


def test_cpu_seconds_of_a_process_come_from_proc_and_grow_with_work():
    import os

    from homing_e2e.tidal import process_cpu_seconds

    before = process_cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # burn 0.3 s of CPU
        pass
    assert process_cpu_seconds(os.getpid()) - before >= 0.2
    assert process_cpu_seconds(2**22 + 1) == 0.0  # beyond pid_max: no such process


def marked(pod: dict, cost: str = "-2147483000") -> dict:
    pod["metadata"].setdefault("annotations", {})["controller.kubernetes.io/pod-deletion-cost"] = cost
    return pod


def deleting(pod: dict) -> dict:
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


@pytest.mark.parametrize("deletion_order, first, whole", [
    pytest.param(["r1", "r3", "r2"], [2, 2], [2, 2], id="waiting-homes-first"),
    pytest.param(["r2", "r1", "r3"], [1, 2], [3, 2], id="a-replica-elsewhere-first"),
    pytest.param(["r2", "r4"], [0, 2], None, id="none-of-the-waiting-homes"),
])
def test_a_scale_in_records_the_replicas_on_waiting_homes_and_its_deletion_order(rec, clock, deletion_order, first, whole):
    """Ranks 0 and 1 ran on a and b and wait; replicas stand on a (marked by a later
    patch), b, c and d. The record says two stood on waiting homes, one marked, and how
    many of the first two deletions were theirs."""
    rec.pod_event("ADDED", rank_pod("p0", 0, "a"))
    rec.pod_event("ADDED", rank_pod("p1", 1, "b"))
    clock.now += 10
    rec.pod_event("DELETED", rank_pod("p0", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p1", 1, "b"))
    rec.pod_event("ADDED", rank_pod("p2", 0))  # the gang back, pending
    pods = {"r1": replica("r1", "a"), "r2": replica("r2", "c"), "r3": replica("r3", "b"), "r4": replica("r4", "d")}
    for pod in pods.values():
        rec.pod_event("ADDED", pod)
    rec.pod_event("MODIFIED", marked(replica("r1", "a")))
    rec.phase = "night"
    rec.scale_in_begins()
    for uid in deletion_order:
        rec.pod_event("MODIFIED", deleting(pods[uid]))
        rec.pod_event("MODIFIED", deleting(pods[uid]))  # status chatter while it goes: one deletion
    s = rec.summary()["scale_in_by_phase"]["night"]
    assert (s["waiting_homes"], s["replicas"], s["on_waiting_homes"]) == (2, 4, 2)
    assert (s["marked_on_waiting_homes"], s["marked_elsewhere"]) == (1, 0)
    assert s["deleted"] == len(deletion_order)
    assert s["first_deletions_on_waiting_homes"] == first
    assert s["first_gang_whole_after"] == whole


def gang_rank(job: str, uid: str, index: int, node_name: str | None = None) -> dict:
    pod = rank_pod(uid, index, node_name)
    pod["metadata"]["annotations"]["volcano.sh/job-name"] = job
    return pod


@pytest.mark.parametrize("deletion_order, whole", [
    pytest.param(["ra", "rb", "rc", "rd"], [2, 2], id="gang-by-gang"),
    pytest.param(["ra", "rc", "rb", "rd"], [3, 2], id="interleaved"),
])
def test_a_scale_in_records_when_the_first_gang_had_every_held_home_back(rec, clock, deletion_order, whole):
    """Gangs x (homes a, b) and y (homes c, d) wait, a replica on each home: deleted gang by
    gang, x is whole after its own two deletions; interleaved, only after three."""
    for job, uid, index, home in (("x", "x0", 0, "a"), ("x", "x1", 1, "b"), ("y", "y0", 0, "c"), ("y", "y1", 1, "d")):
        rec.pod_event("ADDED", gang_rank(job, uid, index, home))
        rec.pod_event("DELETED", gang_rank(job, uid, index, home))
    pods = {f"r{n}": replica(f"r{n}", n) for n in "abcd"}
    for pod in pods.values():
        rec.pod_event("ADDED", pod)
    rec.phase = "night"
    rec.scale_in_begins()
    for uid in deletion_order:
        rec.pod_event("MODIFIED", deleting(pods[uid]))
    s = rec.summary()["scale_in_by_phase"]["night"]
    assert (s["waiting_homes"], s["on_waiting_homes"], s["first_deletions_on_waiting_homes"]) == (4, 4, [4, 4])
    assert s["first_gang_whole_after"] == whole


def test_no_scale_in_record_outside_a_scale_in(rec, clock):
    rec.pod_event("ADDED", replica("r1", "a"))
    rec.pod_event("MODIFIED", deleting(replica("r1", "a")))
    assert rec.summary()["scale_in_by_phase"] == {}


@pytest.mark.parametrize("values, share", [
    pytest.param([1, 2, 3, 4], 0.0, id="in-order"),
    pytest.param([4, 3, 2, 1], 1.0, id="reversed"),
    pytest.param([1, 3, 2, 4], 0.167, id="one-swap"),
    pytest.param([1, 1, 2, 2], 0.0, id="ties-do-not-count"),
    pytest.param([5, 5], None, id="no-pair-that-matters"),
    pytest.param([], None, id="nothing-deleted"),
])
def test_cost_order_inversions(values, share):
    assert inversions(values) == share


def test_the_scale_in_record_says_how_far_the_deletions_strayed_from_the_costs(rec, clock):
    """Marked replicas on two waiting homes and one unmarked elsewhere: deleted in cost order
    the record says 0, against it 1; a replica without a cost does not count."""
    rec.pod_event("ADDED", rank_pod("p0", 0, "a"))
    rec.pod_event("ADDED", rank_pod("p1", 1, "b"))
    rec.pod_event("DELETED", rank_pod("p0", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p1", 1, "b"))
    pods = {"r1": marked(replica("r1", "a"), "-2147483000"), "r2": marked(replica("r2", "b"), "-2147482500"), "r3": replica("r3", "c")}
    for pod in pods.values():
        rec.pod_event("ADDED", pod)
    rec.phase = "night"
    rec.scale_in_begins()
    for uid in ("r2", "r3", "r1"):
        rec.pod_event("MODIFIED", deleting(pods[uid]))
    assert rec.summary()["scale_in_by_phase"]["night"]["cost_order_inversions"] == 1.0


def test_the_scale_in_record_puts_the_gangs_in_mark_order_beside_their_binding_order(rec, clock):
    """Gang y's home carries the lower mark, so homing asked for y first; x bound first."""
    for job, uid, home in (("x", "x0", "a"), ("y", "y0", "b")):
        rec.pod_event("ADDED", gang_rank(job, uid, 0, home))
        rec.pod_event("DELETED", gang_rank(job, uid, 0, home))
    rec.pod_event("ADDED", marked(replica("ra", "a"), "-2147482100"))
    rec.pod_event("ADDED", marked(replica("rb", "b"), "-2147483000"))
    rec.phase = "night"
    rec.scale_in_begins()
    rec.pod_event("ADDED", gang_rank("x", "x1", 0, "c"))
    rec.pod_event("ADDED", gang_rank("x", "x2", 0, "c"))  # another pod of a gang already counted
    clock.now += 1.0
    rec.pod_event("ADDED", gang_rank("y", "y1", 0, "d"))
    s = rec.summary()["scale_in_by_phase"]["night"]
    assert (s["jobs_by_mark"], s["jobs_by_bind"]) == (["y", "x"], [["x"], ["y"]])


def test_gangs_bound_within_one_session_are_one_group_of_the_binding_order(rec, clock):
    """A scheduler binds the gangs of one session from parallel calls: x's pods may land
    before y's though y was placed first, so gangs bound that close are not ordered."""
    for job, uid, home in (("x", "x0", "a"), ("y", "y0", "b"), ("z", "z0", "e")):
        rec.pod_event("ADDED", gang_rank(job, uid, 0, home))
        rec.pod_event("DELETED", gang_rank(job, uid, 0, home))
    for uid, node in (("ra", "a"), ("rb", "b"), ("re", "e")):
        rec.pod_event("ADDED", marked(replica(uid, node)))
    rec.phase = "night"
    rec.scale_in_begins()
    rec.pod_event("ADDED", gang_rank("x", "x1", 0, "c"))
    clock.now += 0.1
    rec.pod_event("ADDED", gang_rank("y", "y1", 0, "d"))
    clock.now += 0.9
    rec.pod_event("ADDED", gang_rank("z", "z1", 0, "f"))
    assert rec.summary()["scale_in_by_phase"]["night"]["jobs_by_bind"] == [["x", "y"], ["z"]]


def test_a_users_own_deletion_cost_is_not_counted_as_homings_mark(rec, clock):
    """The record counts homing's marks only: a cost a user set orders nothing homing asked for."""
    rec.pod_event("ADDED", rank_pod("p0", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p0", 0, "a"))
    pods = {"r1": marked(replica("r1", "a"), "100"), "r2": marked(replica("r2", "b"), "-5")}
    for pod in pods.values():
        rec.pod_event("ADDED", pod)
    rec.phase = "night"
    rec.scale_in_begins()
    for uid in ("r1", "r2"):
        rec.pod_event("MODIFIED", deleting(pods[uid]))
    s = rec.summary()["scale_in_by_phase"]["night"]
    assert (s["marked_on_waiting_homes"], s["marked_elsewhere"], s["jobs_by_mark"]) == (0, 0, [])
    assert s["cost_order_inversions"] is None


def running(pod: dict, ready: bool = True) -> dict:
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return pod


def test_the_scale_in_record_counts_the_replicas_not_ready_as_it_began(rec, clock):
    """A ReplicaSet deletes a replica that is not Running and Ready before any whose cost is
    lower: the record says how many there were, and how many of them carried no mark."""
    rec.pod_event("ADDED", rank_pod("p0", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p0", 0, "a"))
    rec.pod_event("ADDED", running(marked(replica("r1", "a")), ready=False))  # marked, still starting
    rec.pod_event("ADDED", replica("r2", "b"))  # Running, no Ready condition yet
    rec.pod_event("ADDED", running(replica("r3", "c"), ready=False))
    rec.pod_event("MODIFIED", running(replica("r3", "c")))  # ready since
    rec.pod_event("ADDED", running(replica("r4", "d"), ready=False))
    rec.phase = "night"
    rec.scale_in_begins()
    s = rec.summary()["scale_in_by_phase"]["night"]
    assert (s["not_ready"], s["not_ready_unmarked"]) == (3, 2)


def test_replicas_on_waiting_homes_still_unmarked_are_counted(rec, clock):
    """A night waits for homing's marks: the replicas on a waiting gang's home with none yet."""
    rec.pod_event("ADDED", rank_pod("p0", 0, "a"))
    rec.pod_event("ADDED", rank_pod("p1", 1, "b"))
    rec.pod_event("DELETED", rank_pod("p0", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p1", 1, "b"))
    rec.pod_event("ADDED", replica("r1", "a"))
    rec.pod_event("ADDED", marked(replica("r2", "b"), "7"))  # a user's cost is not homing's mark
    rec.pod_event("ADDED", replica("r3", "c"))  # no gang waits for c
    assert rec.unmarked_on_waiting_homes() == 2
    rec.pod_event("MODIFIED", marked(replica("r1", "a")))
    rec.pod_event("MODIFIED", marked(replica("r2", "b")))
    assert rec.unmarked_on_waiting_homes() == 0


@pytest.mark.parametrize("rank0_back_on, claimed", [(None, ["a"]), ("d", [])])
def test_a_pulls_warm_nodes_that_a_waiting_rank_calls_home_are_told_apart(rec, clock, rank0_back_on, claimed):
    """Rank 1 pulls on c while node a, warm and free, is rank 0's home: homing keeps a claimed
    home for its rank and never offers it as image-warm, so the record says which warm nodes
    were a waiting rank's home as the pull bound. Once rank 0 is placed (here on d), a is no
    one's waiting home; a rank's own old home is never counted as claimed against it."""
    rec.pod_event("ADDED", rank_pod("p1", 0, "a"))
    rec.pod_event("ADDED", rank_pod("p3", 1, "b"))
    clock.now += 10
    rec.pod_event("DELETED", rank_pod("p1", 0, "a"))
    rec.pod_event("DELETED", rank_pod("p3", 1, "b"))
    rec.pod_event("ADDED", replica("s1", "b"))  # rank 1's home is held: it cannot go back
    clock.now += 10
    if rank0_back_on:
        rec.pod_event("MODIFIED", rank_pod("p2", 0, rank0_back_on))
        clock.now += 10
    rec.pod_event("MODIFIED", rank_pod("p4", 1, "c"))  # pulls on c
    clock.now += 10
    details = {d["key"]: d for d in rec.summary()["warm_pull_details"]}
    assert details["train/worker/1"]["warm_at_bind"] == ["a"]
    assert details["train/worker/1"]["claimed_at_bind"] == claimed
    if rank0_back_on:
        assert details["train/worker/0"]["claimed_at_bind"] == []  # a was its own home


@pytest.mark.parametrize("stray_warm_node", [False, True])
def test_a_pulls_record_names_the_unclaimed_warm_nodes_however_many_were_claimed(rec, clock, stray_warm_node):
    """Eleven waiting ranks' homes are warm and free as rank 11 pulls on z, four of them taken
    by their ranks in the same cycle. The record's node lists stop at eight, so the first
    eight claimed homes no longer cover the first eight warm ones left after the cycle; the
    unclaimed ones are named from the whole sets. Node u held the image and was no one's home."""
    homes = [f"n{i:02d}" for i in range(12)]
    for name in [*homes, "u", "v", "z"]:
        rec.node_event("ADDED", node(name))
    if stray_warm_node:  # rank 12 ran on u, then on v: u holds the image, no rank waits for it
        rec.pod_event("ADDED", rank_pod("q1", 12, "u"))
        clock.now += 10
        rec.pod_event("DELETED", rank_pod("q1", 12, "u"))
        clock.now += 10
        rec.pod_event("MODIFIED", rank_pod("q2", 12, "v"))
    for i, home in enumerate(homes):
        rec.pod_event("ADDED", rank_pod(f"p{i}", i, home))
    clock.now += 10
    for i, home in enumerate(homes):
        rec.pod_event("DELETED", rank_pod(f"p{i}", i, home))
    rec.pod_event("ADDED", replica("s1", "n11"))  # rank 11's home is held
    clock.now += 10
    rec.pod_event("MODIFIED", rank_pod("r11", 11, "z"))  # pulls on z
    for i in range(4):  # siblings home in the same cycle
        clock.now += 0.05
        rec.pod_event("MODIFIED", rank_pod(f"r{i}", i, homes[i]))
    clock.now += 10
    details = {d["key"]: d for d in rec.summary()["warm_pull_details"]}["train/worker/11"]
    stray = ["u"] if stray_warm_node else []
    assert details["claimed_at_bind"] == homes[:8]  # the list stops at eight
    assert details["warm_after_the_cycle"] == sorted([*homes[4:11], *stray])[:8]
    assert details["unclaimed_at_bind"] == stray
    assert details["unclaimed_after_the_cycle"] == stray
    # with u: rank 12's own move to v left u free as well, so two pulls passed an unclaimed warm node
    assert rec.summary()["replacement_pulls_over_the_floor"].get("unclaimed-left-free", 0) == (2 if stray_warm_node else 0)


@pytest.mark.parametrize("taker, over_the_floor", [
    ("sibling-home", "taken-by-home"), ("new-rank", "taken-by-same-image"), ("replica", "taken-by-other-image"),
    ("none", "unclaimed-left-free"), ("later", "unclaimed-left-free"),
])
def test_a_pull_over_the_cold_floor_says_what_took_the_warm_node(rec, clock, taker, over_the_floor):
    """Rank 0 pulls on c while a, warm, looks free; in the same cycle a is taken by rank 1
    going home, by a new rank of the same image, or by a replica of another image. Only the
    last could a placement have spared; a node left free, or taken a cycle later, is a miss."""
    if taker == "sibling-home":  # rank 1 ran on a after rank 0: a is its home, and claimed
        rec.pod_event("ADDED", rank_pod("q1", 1, "a"))
        clock.now += 10
        rec.pod_event("DELETED", rank_pod("q1", 1, "a"))
    first_run_then_gone(rec, clock)  # rank 0 ran on a
    rec.pod_event("ADDED", replica("s0", "b"))  # b, c, d hold nothing of train's
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))  # pulls on c
    clock.now += rec.settle_time * (2.0 if taker == "later" else 0.25)
    if taker == "sibling-home":
        rec.pod_event("MODIFIED", rank_pod("q2", 1, "a"))
    elif taker in ("new-rank", "later"):
        rec.pod_event("MODIFIED", rank_pod("n7", 7, "a"))
    elif taker == "replica":
        rec.pod_event("ADDED", replica("s1", "a"))
    summary = rec.summary()
    assert summary["cold_at_bind_replacement_pulls"] == 0  # a was free and warm as rank 0 bound
    assert summary["replacement_pulls_over_the_floor"] == {over_the_floor: 1}
    [details] = [d for d in summary["warm_pull_details"] if d["key"] == "train/worker/0"]
    assert details["over_the_floor"] == over_the_floor
    kinds = {"sibling-home": "home", "new-rank": "same-image", "replica": "other-image"}
    assert details["taken_in_the_cycle_by"] == ({kinds[taker]: 1} if taker in kinds else {})


def test_a_pull_cold_as_it_bound_is_not_over_the_floor(rec, clock):
    rec.pod_event("ADDED", rank_pod("p1", 0, "a"))
    clock.now += 10
    rec.pod_event("DELETED", rank_pod("p1", 0, "a"))
    rec.pod_event("ADDED", replica("s1", "a"))  # a held as rank 0 binds
    clock.now += 10
    rec.pod_event("MODIFIED", rank_pod("p2", 0, "c"))
    summary = rec.summary()
    assert (summary["replacement_pulls"], summary["cold_at_bind_replacement_pulls"]) == (1, 1)
    assert summary["replacement_pulls_over_the_floor"] == {}


@pytest.mark.parametrize("decision, reason", [
    ('{"reason": "home", "rank": "worker/0"}', "home"),
    ("floor", ""),  # the patching floor's webhook (bench/noop_webhook.py --patch) writes this
    ("{not json", ""),
    ('["a list"]', ""),
])
def test_a_decision_annotation_that_is_not_homings_counts_the_pull_and_gives_no_reason(rec, clock, decision, reason):
    """The `+patchwebhook` floor annotates every pod with "floor", not homing's JSON. The
    recorder read it as JSON and raised in the middle of the bind: the rank's pull, when its
    Running state came in the same event, was never counted, so the floor's pulls came out
    low (the reflector logs the failure and goes on)."""
    first_run_then_gone(rec, clock)
    pod = rank_pod("p2", 0, "c")
    pod["metadata"]["annotations"]["homing.io/decision"] = decision
    rec.pod_event("MODIFIED", pod)  # binds and runs on c: a pull
    summary = rec.summary()
    assert summary["replacement_pulls"] == 1
    assert rec.replacements[-1].reason == reason
