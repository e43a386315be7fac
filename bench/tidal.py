"""`make bench-tidal`: scripted tidal days on the real Volcano scheduler (DAYS), each run
by every variant on 64 fake 8-NPU nodes (--repeats times, interleaved, so the shared
machine's load falls on all alike), then by LARGE_VARIANTS on 304 nodes. Variants:
plain Volcano, its image locality, its gang-aware preemption (`gangpreempt`, or
`gangreclaim` on a reclaim day), homing on each; `volcano+homing-no-<part>` switches one
part off (a behaviour.md "Beyond the home" preference, the deletion-cost marks, the webhook);
`+noopwebhook` in homing's place registers a webhook that admits every pod unchanged (what any
webhook costs the day, whatever it decides); `+patchwebhook` one that answers every pod with a
patch of homing's shape that changes no placement (what any webhook that mutates costs: the
API server applies the patch within the round trip it times).
On Volcano's days a night scales in one gang's size of replicas at a time, as the shipped
autoscaler does; `-at-once-scale-in` scales in at once (kube-scheduler's day does by default).
Writes bench/results/tidal.json (`days`, and `runs` = the first day at 64 nodes), tidal.md
(tables, targets), tidal.svg.

    .venv/bin/python bench/tidal.py [--days tidal shared] [--variants ...] [--repeats 3]
        [--superpods 8] [--large-superpods 38] [--large-variants ...] [--skip-large] [--out tidal.json]

A variant's figures are the medians of its repeats; every repeat is kept under "repeats".
The file is rewritten after every run, so an interrupted benchmark keeps what it measured.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scale_measure, when loaded from elsewhere

import noop_floor  # noqa: E402
import scale_measure as sm  # noqa: E402
from homing_e2e.cluster import build_binaries  # noqa: E402
from homing_e2e.imagecache import MODEL_BANDWIDTH_GBPS  # noqa: E402
from homing_e2e.operator_process import operator_code, scrape  # noqa: E402
from homing_e2e.tidal import NODES_PER_SUPERPOD, NS, TidalCluster, dump  # noqa: E402
from homing_e2e.tidal_schedulers import SCHEDULE_POLICY, SUPERPOD_POLICY  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
IMAGES = {"train-a:30g": 30.0, "train-b:25g": 25.0, "train-c:40g": 40.0, "serve:15g": 15.0}
# The crowded days' images: three training images several gangs share, or one per gang, and two
# inference services; the sizes a user's cluster mixes (one per gang overflows the 120 GB disks).
CROWDED_IMAGES = {"train-a:32g": 32.0, "train-b:22g": 22.0, "train-c:28g": 28.0, "train-d:18g": 18.0,
                  "train-e:26g": 26.0, "train-f:24g": 24.0, "serve-a:16g": 16.0, "serve-b:9g": 9.0}
BANDWIDTH_GBPS = MODEL_BANDWIDTH_GBPS
VARIANTS = ("volcano", "volcano+imagelocality", "volcano+gangpreempt", "volcano+homing", "volcano+gangpreempt+homing")
LARGE_VARIANTS = ("volcano", "volcano+gangpreempt", "volcano+homing", "volcano+gangpreempt+homing")
WITHOUT_HOMING = ("volcano", "volcano+imagelocality", "volcano+gangpreempt")
KUBE_VARIANTS = ("kube-scheduler", "kube-scheduler+homing")  # its default profile holds ImageLocality already
STEPS = ("dawn", "morning wave 1", "morning wave 2", "night", "faults", "recovery", "next morning", "next night")  # the day's order


@dataclass(frozen=True)
class Service:
    """An inference Deployment of the tide, and its share of the tide's replicas."""

    name: str
    image: str
    share: int = 1


SERVE = (Service("qwen", "serve:15g"),)
TWO_SERVICES = (Service("qwen", "serve-a:16g", 2), Service("bert", "serve-b:9g", 1))


def split(replicas: int, services: tuple[Service, ...]) -> dict[str, int]:
    """The tide's replicas shared out by the services' shares (largest remainders first), each
    service keeping one at least."""
    total = sum(s.share for s in services)
    exact = {s.name: max(1, replicas * s.share / total) for s in services}
    out = {name: int(x) for name, x in exact.items()}
    for name in sorted(exact, key=lambda n: out[n] - exact[n])[: max(0, replicas - sum(out.values()))]:
        out[name] += 1
    return out


@dataclass(frozen=True)
class Day:
    """One scripted day: behaviour.md "Operation" tide, the gang size, and the training images in turn."""

    tide: str  # manifests/tidal/<tide>; a +gangpreempt variant runs its gang-aware action; kube-scheduler: the PodGroups' disruption mode
    gang: int
    trains: tuple[tuple[str, int | None], ...]  # (image, sp-block of the first job using it)
    about: str
    variants: tuple[str, ...] = VARIANTS  # run unless --variants names others
    large_variants: tuple[str, ...] = LARGE_VARIANTS
    # The nights scale in one gang's size of replicas at a time, as the shipped autoscaler does
    # (manifests/tidal/common/inference-hpa.yaml) for Volcano, which takes waiting gangs in a
    # fixed order; kube-scheduler's gangs take turns, and there one scale-in at once does better.
    stepped_nights: bool = True
    # > 0: each training job is created once the one before runs, this many seconds later.
    # kube-scheduler's preemption prefers the victim that started last, at the 1 s resolution
    # of a pod's startTime, and breaks a tie at random: jobs started in the same second make a
    # replica preempt a second gang while the first one's pods are still going.
    start_gap_s: float = 0.0
    services: tuple[Service, ...] = SERVE
    # The second morning wave adds this share of the nodes to the tide's base: 1/2 displaces
    # half the training; the crowded days' 5/12 needs 14 more nodes than are free at 48.
    peak: float = 0.5
    images: tuple[tuple[str, float], ...] = tuple(IMAGES.items())
    # > 0: every training job is a super-pod job in blocks of this many chips (`sp-block`), with
    # the policy MindCluster's plugin takes for one (tidal_schedulers.SUPERPOD_POLICY).
    superpod_block: int = 0


SUPERPOD_VARIANTS = ("volcano+mindcluster", "volcano+mindcluster+homing", "volcano+ascend", "volcano+ascend+homing")
CROWDED_VARIANTS = ("volcano", "volcano+homing", "volcano+gangpreempt", "volcano+gangpreempt+homing")
CROWDED = dict(services=TWO_SERVICES, peak=5 / 12, images=tuple(CROWDED_IMAGES.items()), stepped_nights=False)
SHARED_TRAINS = (("train-a:32g", None), ("train-b:22g", None), ("train-c:28g", None))
SOLO_TRAINS = tuple((image, None) for image in CROWDED_IMAGES if image.startswith("train-"))

DAYS = {
    "tidal": Day("preempt", 16, (("train-a:30g", 64), ("train-b:25g", None), ("train-c:40g", None)),
                 "the first day: preempt tide, 16-rank gangs (the first a super-pod job), three images"),
    "shared": Day("reclaim", 8, (("train-a:30g", None), ("train-b:25g", None)),
                  "reclaim tide (two queues), 8-rank gangs, two training images each shared by several jobs"),
    "kube-gangs": Day("all", 16, (("train-a:30g", None), ("train-b:25g", None), ("train-c:40g", None)),
                      "kube-scheduler 1.37's own gangs: 16-rank Indexed Jobs in PodGroups evicted whole, three images",
                      KUBE_VARIANTS, KUBE_VARIANTS, stepped_nights=False, start_gap_s=1.5),
    # Issue 43's super-pod day: the first day with every job a super-pod job, beside
    # MindCluster's plugin (which re-plans a super-pod job whole unless every old node is free).
    "superpod": Day("preempt", 16, (("train-a:30g", None), ("train-b:25g", None), ("train-c:40g", None)),
                    "the super-pod day: the preempt tide with every job a super-pod job (16 ranks in 4-node blocks "
                    "inside 8-node super-pods), a node fault inside a super-pod",
                    SUPERPOD_VARIANTS, SUPERPOD_VARIANTS, superpod_block=32),
    # Issue 44's crowded cluster: 6-rank gangs on 3/4 of the nodes, two inference services whose
    # morning peak needs 14 more nodes than are free at 48 (inference reclaims about half the
    # training), the nights scaled in at once as an HPA without a scale-down policy does
    # (`-stepped-scale-in` for the steps).
    "crowded": Day("reclaim", 6, SHARED_TRAINS,
                   "crowded reclaim tide (two queues), 6-rank gangs over three shared images, two inference services, "
                   "peak over the free room",
                   CROWDED_VARIANTS, CROWDED_VARIANTS, **CROWDED),
    "crowded-solo": Day("reclaim", 6, SOLO_TRAINS,
                        "the crowded day with one image per gang (six, overflowing the node's disk)",
                        CROWDED_VARIANTS, CROWDED_VARIANTS, **CROWDED),
    "crowded-kube": Day("all", 6, SHARED_TRAINS, "the crowded day on kube-scheduler 1.37's own gangs (6-rank Indexed Jobs)",
                        KUBE_VARIANTS, KUBE_VARIANTS, start_gap_s=1.5, **CROWDED),
}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


async def unbound(c: TidalCluster, step: str) -> str:
    """The step's end for the log: the training ranks still without a node, if any, with their
    jobs' and PodGroups' phases as the scheduler's side has them (which part holds the gang back)."""
    missing = c.end_step(step)
    if not missing:
        return ""
    state = await c.pending_state("train-")
    jobs = {j: state["jobs"].get(j) for j in missing}
    groups = {g: v for g, v in state["podgroups"].items() if any(g == j or g.startswith(f"{j}-") for j in missing)}
    return f"; not bound at the step's end: {missing} (jobs {jobs}, groups {groups})"


async def marks_written(c: TidalCluster, step: str) -> None:
    """TidalCluster.marks_written, saying when some were still unmarked at MARKS_WAIT_S."""
    if left := await c.marks_written(MARKS_WAIT_S):
        log(f"  {step}: {left} replicas on waiting homes still unmarked after {MARKS_WAIT_S:.0f} s")


async def scale_to(c: TidalCluster, services: tuple[Service, ...], replicas: int) -> None:
    for name, n in split(replicas, services).items():
        await c.scale(name, n)


async def tide(c: TidalCluster, step: str, replicas: int, services: tuple[Service, ...], scale_in_step: int = 0,
               marks: bool = False) -> None:
    """One step of the inference tide. A night is a scale-in, recorded as it begins, and ends once
    every training rank is bound again: there is room for all of them then, and kube-scheduler
    retries a waiting gang after quiet gaps longer than `quiet`. With `marks` (homing writes
    deletion-cost marks), a night begins once they are written. With `scale_in_step`, a night
    goes down that many replicas at a time, SCALE_IN_PERIOD_S apart, as a scale-down policy does."""
    c.recorder.phase = step
    night = step.endswith("night")
    if night and marks:
        await marks_written(c, step)
    if night:
        c.recorder.scale_in_begins()
    if night and scale_in_step:
        current = 0
        for s in services:
            current += (await c.kube.request("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{s.name}"))["spec"]["replicas"]
        for target in range(current - scale_in_step, replicas, -scale_in_step):
            await scale_to(c, services, target)
            await asyncio.sleep(SCALE_IN_PERIOD_S)
    await scale_to(c, services, replicas)
    await c.settle(quiet=4, at_least=6, until=c.all_training_bound if night else None)


def scale_in(c: TidalCluster, step: str) -> str:
    """The step's scale-in for the log: replicas on waiting gangs' homes (marked), and how many
    of the first that many deletions were theirs."""
    x = c.recorder.scale_ins.get(step)
    if x is None:
        return ""
    s = x.summary()
    first, n = s["first_deletions_on_waiting_homes"]
    whole = s["first_gang_whole_after"]
    gang = f", the first gang's {whole[1]} held homes all freed after {whole[0]} deletions" if whole else ""
    return (f"; scale-in: {s['on_waiting_homes']} of {s['replicas']} replicas on {s['waiting_homes']} waiting homes "
            f"({s['marked_on_waiting_homes']} marked, {s['marked_elsewhere']} marked elsewhere; "
            f"{s['not_ready']} not ready, {s['not_ready_unmarked']} of them unmarked), "
            f"the first {n} deletions {first} of them{gang}, cost order inverted in {s['cost_order_inversions']} of pairs; "
            f"gangs by mark {s['jobs_by_mark']}, by binding {s['jobs_by_bind']}")


def faulted_nodes(bound: dict[str, str], jobs: int) -> list[str]:
    """The day's two faulted nodes, named by the ranks on them: the lowest bound rank of the
    first job and of the job half-way down (the next bound job where one has no rank bound).
    Every variant so faults ranks of the same jobs, whose images are the same: picked by node
    name, the fault fell on whichever gang the variant's dawn had put there, and the two
    variants of a repeat pulled different images at the floor (up to 1.8 minutes apart on the
    crowded day), a difference no placement rule made. `bound`: rank key ("train-3/worker/5")
    -> its node."""
    by_job: dict[int, list[tuple[int, str]]] = {}
    for key, node in bound.items():
        job, _, index = key.partition("/")
        by_job.setdefault(int(job.removeprefix("train-")), []).append((int(index.rpartition("/")[2]), node))
    out: list[str] = []
    for start in (0, jobs // 2):
        for j in [*range(start, jobs), *range(start)]:
            ranks = by_job.get(j)
            if ranks and (node := min(ranks)[1]) not in out:
                out.append(node)
                break
    return out


async def day(c: TidalCluster, d: Day, scale_in_step: int = 0, marks: bool = False) -> None:
    """The scripted day. Sizes follow the cluster: 3/4 of it training, inference tides."""
    nodes = c.superpods * NODES_PER_SUPERPOD
    jobs = max(1, nodes * 3 // 4 // d.gang)
    base = max(2, nodes // 8)
    for j in range(jobs):
        image, sp_block = d.trains[j % len(d.trains)]
        if d.superpod_block:
            await c.training_job(f"train-{j}", d.gang, image, sp_block=d.superpod_block,
                                 annotations={SCHEDULE_POLICY: SUPERPOD_POLICY})
        else:
            await c.training_job(f"train-{j}", d.gang, image, sp_block=sp_block if j == 0 else None)
        if d.start_gap_s:
            await c.wait_bound(f"train-{j}/", d.gang)
            await asyncio.sleep(d.start_gap_s)
    for s in d.services:
        await c.inference(s.name, split(base, d.services)[s.name], s.image)
    await c.settle(quiet=4, at_least=8)
    log(f"  dawn: {jobs} training jobs of {d.gang}, inference {base}{await unbound(c, 'dawn')}")
    restarts = await c.count_restarts("dawn", {})
    for step, replicas in (("morning wave 1", base + nodes // 4), ("morning wave 2", base + round(nodes * d.peak)), ("night", base)):
        await tide(c, step, replicas, d.services, scale_in_step, marks)
        restarts = await c.count_restarts(step, restarts)
        log(f"  {step}: inference {replicas}{scale_in(c, step)}{await unbound(c, step)}")
    faulty = faulted_nodes({p.key: p.node for p in c.recorder.pods.values() if p.node and p.key.startswith("train-")}, jobs)
    c.recorder.phase = "faults"
    for node in faulty:
        await c.fault(node, down=True)
    # tainted at once, evicted 5 s later (the second node up to 10 s after: eviction rate), jobs restart
    await c.settle(quiet=4, at_least=20)
    restarts = await c.count_restarts("faults", restarts)
    log(f"  faults: {faulty} NotReady{await unbound(c, 'faults')}")
    c.recorder.phase = "recovery"
    for node in faulty:
        await c.fault(node, down=False)
    await c.settle(quiet=4, at_least=6)
    restarts = await c.count_restarts("recovery", restarts)
    log(f"  faults recovered{await unbound(c, 'recovery')}")
    for step, replicas in (("next morning", base + nodes // 4), ("next night", base)):
        await tide(c, step, replicas, d.services, scale_in_step, marks)
        restarts = await c.count_restarts(step, restarts)
        log(f"  {step}: inference {replicas}{scale_in(c, step)}{await unbound(c, step)}")


# what a variant's `-no-<part>` switches off: behaviour.md's preferences, the deletion-cost marks, and
# the webhook itself (homing then watches, remembers and marks, but admits nothing: what admission costs)
ABLATIONS = ("claimed-homes", "image-warm", "image-labels", "vacant-homes", "displace-few", "free-room", "deletion-marks", "webhook")
SWITCHES = {"deletion-marks": "HOMING_DELETION_COST__ENABLED",
            "webhook": "HOMING_WEBHOOK__MANAGE_CONFIGURATION"}  # the rest are HOMING_PREFERENCES__<NAME>


@dataclass(frozen=True)
class Setting:
    """A cluster setting tried beside homing, named by a variant suffix."""

    controller_manager: tuple[str, ...] = ()
    volcano: tuple[str, ...] = ()
    stepped_scale_in: bool | None = None  # the nights go down one gang's size at a time; None: the day's own


# A stepped night's period between steps: longer than Volcano takes to place a gang once its
# room is idle (about a second here); an HPA scale-down policy steps at its sync period, 15 s.
SCALE_IN_PERIOD_S = 5.0
MARKS_WAIT_S = 30.0  # TidalCluster.marks_written


SETTINGS = {
    # The controller manager's client at 20 QPS (the default) deletes a 152-replica scale-in
    # over ~6 s, and Volcano places each pending gang on whatever freed first.
    "-fast-scale-in": Setting(controller_manager=("--kube-api-qps=1000", "--kube-api-burst=1000")),
    # Past 100 nodes Volcano's predicates stop after a sample of the nodes (145 of 304), in
    # preempt too: a burst's agreed victim is often outside a replica's sample.
    "-all-nodes": Setting(volcano=("--percentage-nodes-to-find=100",)),
    # The ReplicaSet controller deletes a scale-in's victims from parallel goroutines, so when
    # a night removes more replicas than stand on waiting homes, the others' nodes come free
    # among them and a gang is placed on whatever is idle. One gang's size at a time (an HPA
    # scale-down policy of that many Pods per period), every victim is a marked one.
    "-stepped-scale-in": Setting(stepped_scale_in=True),
    # The whole night's scale-in at once, as a Deployment scaled by hand or an HPA without a
    # scale-down policy does: the ablation of the Volcano days' steps.
    "-at-once-scale-in": Setting(stepped_scale_in=False),
}


@dataclass(frozen=True)
class Variant:
    """A variant's name read once: `<scheduler>[-no-<part>]...[<setting>]...`, e.g.
    'volcano+homing-no-image-warm-fast-scale-in'."""

    scheduler: str  # 'volcano+homing': what runs
    off: tuple[str, ...]  # ABLATIONS switched off (what each one buys)
    suffix: str  # the cluster settings' suffix, '' for none; runs are compared within one
    setting: Setting

    @property
    def env(self) -> dict[str, str]:
        """The operator's environment that switches those parts off."""
        return {SWITCHES.get(pref, f"HOMING_PREFERENCES__{pref.replace('-', '_').upper()}"): "false" for pref in self.off}

    @property
    def unset(self) -> str:
        """The name without its settings: how it is known within its group."""
        return self.scheduler + "".join(f"-no-{pref}" for pref in self.off)


def parse_variant(name: str) -> Variant:
    rest, names = name, []
    while match := next((x for x in SETTINGS if rest.endswith(x)), None):
        rest, names = rest[: -len(match)], [match, *names]
    off = []
    while match := next((p for p in ABLATIONS if rest.endswith(f"-no-{p}")), None):
        rest, off = rest[: -len(f"-no-{match}")], [match, *off]
    flags = [SETTINGS[n] for n in names]
    stepped = [x.stepped_scale_in for x in flags if x.stepped_scale_in is not None]
    return Variant(rest, tuple(off), "".join(names), Setting(tuple(f for x in flags for f in x.controller_manager),
                                                              tuple(f for x in flags for f in x.volcano),
                                                              stepped[-1] if stepped else None))


def stepped_nights(v: Variant, d: Day) -> bool:
    """Whether a night scales in by steps: the variant's setting, else the day's own."""
    return d.stepped_nights if v.setting.stepped_scale_in is None else v.setting.stepped_scale_in


NOOP = "+noopwebhook"  # a webhook in homing's place that admits every pod unchanged (bench/noop_floor.py)
PATCHING = "+patchwebhook"  # one that answers with a patch of homing's shape that changes no placement
NOOP_PROBE = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "noop-probe"},
              "spec": {"containers": [{"name": "main", "image": "probe"}]}}


def tide_of(variant: str, d: Day) -> str:
    return f"gang{d.tide}" if "+gangpreempt" in variant else d.tide


SESSION_MS = "volcano_e2e_scheduling_latency_milliseconds"
ACTION_MS = "volcano_action_scheduling_latency_milliseconds"


@dataclass
class Readings:
    """What the processes' own counters say at one moment; the day is the difference of two."""

    cpu: dict[str, float]  # process -> CPU seconds
    admission: dict[str, sm.Buckets]  # where an admission's time goes (none without a webhook)
    connections: float  # TLS connections homing's webhook served reviews on
    scheduler: dict[str, sm.Buckets]  # Volcano's sessions and each action in them, ms (none for kube-scheduler)


async def readings(c: TidalCluster, noop_metrics_port: int | None = None) -> Readings:
    """The API server's round trip to the webhook (homing's, or the no-op's in its place), homing's
    server from a review's arrival to its answer, its decision alone and how late its loop ran (or
    the no-op's loop); Volcano's session and action times."""
    admission, connections = {}, 0.0
    if c.operator is not None or noop_metrics_port is not None:
        api = await sm.apiserver_metrics(c.kube)
        admission["apiserver_round_trip"] = sm.buckets(api, sm.APISERVER_WEBHOOK_SECONDS, sm.homing_webhook)
    if noop_metrics_port is not None:
        admission["noop_loop_lag"] = sm.buckets(scrape(noop_metrics_port), "homing_event_loop_lag_seconds")
    if c.operator is not None:
        op = c.operator.metrics()
        admission |= {"homing_server": sm.buckets(op, "homing_admission_seconds"),
                      "homing_decision": sm.buckets(op, "homing_webhook_duration_seconds"),
                      "homing_loop_lag": sm.buckets(op, "homing_event_loop_lag_seconds")}
        connections = sum(sm.counters(op, "homing_admission_connections", "").values())
    scheduler: dict[str, sm.Buckets] = {}
    if text := c.scheduling.metrics():
        scheduler = {"session_ms": sm.buckets(text, SESSION_MS),
                     **{f"{action}_ms": b for action, b in sorted(sm.buckets_by(text, ACTION_MS, "action").items())}}
    return Readings(c.cpu_seconds(), admission, connections, scheduler)


def histogram_summary(after: dict[str, sm.Buckets], before: dict[str, sm.Buckets]) -> dict:
    """Each histogram's count, p50 and p99 over what it gathered between two readings; left out if nothing."""
    out = {}
    for name in after:
        day = sm.delta(after[name], before.get(name, {}))
        if sm.count(day):
            out[name] = {"n": int(sm.count(day)), "p50": round(sm.quantile(day, 0.5), 4), "p99": round(sm.quantile(day, 0.99), 4)}
    return out


def the_day(before: Readings, after: Readings) -> dict:
    return {"cpu_s": {name: round(after.cpu[name] - before.cpu.get(name, 0.0), 1) for name in after.cpu},
            "admission_s": histogram_summary(after.admission, before.admission),
            "admission_connections": int(after.connections - before.connections),
            "scheduler": histogram_summary(after.scheduler, before.scheduler)}


async def run(variant: str, day_name: str, superpods: int, volcano_args: tuple[str, ...] = ()) -> dict:
    d = DAYS[day_name]
    log(f"{variant} on the {day_name} day, {superpods * NODES_PER_SUPERPOD} nodes {' '.join(volcano_args)}")
    v = parse_variant(variant)
    base, env, setting = v.scheduler, v.env, v.setting
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the operator process inherits it
    c = TidalCluster(base, superpods, dict(d.images), BANDWIDTH_GBPS, volcano_args=volcano_args + setting.volcano,
                     tide=tide_of(base, d), controller_manager_args=setting.controller_manager)
    noop = None
    try:
        await c.start()
        if NOOP in base or PATCHING in base:
            noop = await noop_floor.start(c.kube, c.workdir / "noop", "noop" if NOOP in base else "patch", NOOP_PROBE, NS)
        port = noop[1] if noop else None
        before = await readings(c, port)
        stepped = stepped_nights(v, d)
        await day(c, d, d.gang if stepped else 0, marks="+homing" in base and "deletion-marks" not in v.off)
        result = {**c.recorder.summary(), "gang_restarts": await c.gang_restarts(), "stepped_nights": stepped,
                  **the_day(before, await readings(c, port))}
    finally:
        if noop:
            noop[0].terminate()
            noop[0].wait(10)
        await c.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    pulls = result["pulls_by_phase"]
    result["first_placement_pulls"] = sum(row.get("first", 0) for row in pulls.values())
    log(f"  -> home {result['home_rate']} feasible {result['feasible_home_rate']} re-placement pulls "
        f"{result['replacement_pulls']} ({result['replacement_pull_minutes']} min) all {result['pulls']} "
        f"gang restarts {result['gang_restarts']} p50 {result['create_to_scheduled_p50_s']} "
        f"(by kind {result['create_to_scheduled_p50_by_kind']}; gang creation {result['gang_creation_spread_s']}; "
        f"admission {result['admission_s']} on {result['admission_connections']} connections; scheduler {result['scheduler']})")
    return result


def add_counts(counts) -> dict:
    """Adds up {label: n} (or {phase: {label: n}}) dictionaries."""
    out: dict = {}
    for c in counts:
        for k, v in c.items():
            out[k] = add_counts([out.get(k, {}), v]) if isinstance(v, dict) else out.get(k, 0) + v
    return out


def medians(repeats: list[dict]) -> dict:
    """One figure per field: the median over the repeats (numbers only); the repeats kept whole."""
    out: dict = {}
    for field, value in repeats[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [r[field] for r in repeats if r.get(field) is not None]
            out[field] = round(statistics.median(values), 4) if values else None
    # counts: summed over the repeats
    for field in ("misses", "by_phase", "pulls_by_phase", "restarts_by_phase", "unbound_by_phase", "resumed_by_phase"):
        out[field] = add_counts(r.get(field) or {} for r in repeats)
    out["repeats"] = repeats
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


TARGETS = (  # the tidal days' targets, checked against the same run's plain Volcano
    ("home rate >= 0.80", lambda h, v, best: h["home_rate"], lambda x: x >= 0.80),
    ("feasible home rate >= 0.99", lambda h, v, best: h["feasible_home_rate"], lambda x: x >= 0.99),
    ("re-placement pull minutes <= 0.30 x Volcano's",
     lambda h, v, best: ratio(h["replacement_pull_minutes"], v["replacement_pull_minutes"]), lambda x: x <= 0.30),
    ("re-placement pull minutes <= 0.5 x best without homing",
     lambda h, v, best: ratio(h["replacement_pull_minutes"], best), lambda x: x <= 0.5),
    ("all pull minutes <= 0.60 x Volcano's", lambda h, v, best: ratio(h["pull_minutes"], v["pull_minutes"]), lambda x: x <= 0.60),
    ("gang restarts <= Volcano's", lambda h, v, best: (h["gang_restarts"], v["gang_restarts"]), lambda x: x[0] <= x[1]),
    ("create->scheduled p50 <= 1.05 x Volcano's",
     lambda h, v, best: ratio(h["create_to_scheduled_p50_s"], v["create_to_scheduled_p50_s"]), lambda x: x <= 1.05),
)


FLOORS = {  # the lowest a target's measure can go in this run, whatever the placements
    # all pulls: this run's first placements alone (nothing holds a first image anywhere)
    "all pull minutes <= 0.60 x Volcano's":
        lambda h, v, best: ratio(h["pull_minutes"] - h["replacement_pull_minutes"], v["pull_minutes"]),
    # re-placement pulls: the cold ones alone (no node holding the image could have taken the
    # pod as it bound); beside it, those with none left once the same cycle's binds are known
    "re-placement pull minutes <= 0.30 x Volcano's": lambda h, v, best: cold_floor(h, v["replacement_pull_minutes"]),
    "re-placement pull minutes <= 0.5 x best without homing": lambda h, v, best: cold_floor(h, best),
}


def cold_floor(h: dict, against: float | None) -> str:
    """'certain / with the same cycle's binds' as ratios of `against`."""
    return f"{ratio(h['cold_at_bind_replacement_pull_minutes'], against)} / {ratio(h['cold_replacement_pull_minutes'], against)}"


def targets(runs: dict) -> list[dict]:
    """Each homing variant of one day and size against the targets (None: not measured),
    each against the runs without homing under the same cluster settings."""
    groups: dict[str, dict] = {}
    for name, r in runs.items():
        v = parse_variant(name)
        groups.setdefault(v.suffix, {})[v.unset] = r
    return [{**row, "variant": row["variant"] + suffix} for suffix, group in groups.items() for row in _targets(group)]


def _targets(runs: dict) -> list[dict]:
    v = runs.get("volcano")
    if not v:
        return []
    without = [runs[n]["replacement_pull_minutes"] for n in WITHOUT_HOMING if n in runs]
    best = min(without) if without else None
    out = []
    for name, h in runs.items():
        if "homing" not in name or parse_variant(name).off:  # ablations show what a preference buys, not targets
            continue
        for label, measure, ok in TARGETS:
            try:
                value = measure(h, v, best)
                met = ok(value)
            except TypeError:  # a figure missing from the run
                value, met = None, None
            row = {"variant": name, "target": label, "measured": value, "met": met}
            floor = FLOORS.get(label)
            if floor:
                try:
                    row["floor"] = floor(h, v, best)
                except (KeyError, TypeError):  # a run recorded before the figure existed
                    pass
            out.append(row)
    return out


def _gang_aware(scheduler: str) -> bool:
    return "+gang" in scheduler or scheduler.startswith("kube-scheduler")


def _any(scheduler: str) -> bool:
    return True


# The home rule's "done when", checked in every run (not the median) against the same
# scheduler without homing in the same repeat: (label, measure(h, base), met(value), applies(scheduler))
HOME_RULE_TARGETS = (
    ("home rate >= 0.90 (gang-aware actions, kube-scheduler's gangs)", lambda h, b: h["home_rate"], lambda x: x >= 0.90, _gang_aware),
    ("home rate >= 0.80 (plain preempt/reclaim)", lambda h, b: h["home_rate"], lambda x: x >= 0.80, lambda s: not _gang_aware(s)),
    ("feasible home rate = 1.00", lambda h, b: h["feasible_home_rate"], lambda x: x >= 1.0, _any),
    # Pulls first (issue 44): homing must never cost a pull minute the scheduler alone would not.
    ("re-placement pull minutes <= the same scheduler without homing",
     lambda h, b: (h["replacement_pull_minutes"], b["replacement_pull_minutes"]), lambda x: x[0] <= x[1], _any),
    ("re-placement pulls <= 1.1 x the run's certain cold floor",
     lambda h, b: (h["replacement_pulls"], h["cold_at_bind_replacement_pulls"]), lambda x: x[0] <= 1.1 * x[1],
     lambda s: s.startswith("volcano")),
    ("re-placement pulls <= 0.2 x the same scheduler without homing",
     lambda h, b: ratio(h["replacement_pulls"], b["replacement_pulls"]), lambda x: x <= 0.2, lambda s: s.startswith("kube-scheduler")),
    ("gang restarts <= the same scheduler without homing", lambda h, b: (h["gang_restarts"], b["gang_restarts"]),
     lambda x: x[0] <= x[1], _any),
    ("create->scheduled p50 <= 1.05 x the same scheduler without homing",
     lambda h, b: ratio(h["create_to_scheduled_p50_s"], b["create_to_scheduled_p50_s"]), lambda x: x <= 1.05, _any),
)


def home_rule_targets(runs: dict) -> list[dict]:
    """Each homing variant (not an ablation), repeat by repeat, against its scheduler alone
    (the same name without '+homing', same settings) in the same repeat."""
    out = []
    for name, h in runs.items():
        v = parse_variant(name)
        if "+homing" not in v.scheduler or v.off:
            continue
        base = runs.get(v.scheduler.replace("+homing", "") + v.suffix)
        for label, measure, ok, applies in HOME_RULE_TARGETS:
            if not applies(v.scheduler):
                continue
            mine = h.get("repeats") or [h]
            if base is not None:
                pairs = list(zip(mine, base.get("repeats") or [base]))
            else:  # the targets against the scheduler alone cannot be checked; the others can
                pairs = [] if "without homing" in label else [(r, {}) for r in mine]
            values, met = [], True
            for hr, br in pairs:
                try:
                    value = measure(hr, br)
                    good = ok(value)
                except (TypeError, KeyError):  # a figure missing from the run
                    value, good = None, None
                values.append(value)
                met = met and bool(good)
            out.append({"variant": name, "target": label, "measured": values, "met": met if values else None})
        if base is not None:
            mine = [r.get("replacement_pull_minutes") for r in h.get("repeats") or [h]]
            theirs = [r.get("replacement_pull_minutes") for r in base.get("repeats") or [base]]
            value = ratio(median_of(mine), median_of(theirs))
            out.append({"variant": name, "target": MEDIAN_PULLS, "measured": value,
                        "met": None if value is None else value <= 0.5})
    return out


MEDIAN_PULLS = "median re-placement pull minutes <= 0.5 x the same scheduler without homing"


def median_of(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def over_the_floor(runs: dict) -> dict[str, list[dict]]:
    """Each homing variant's runs that counted it: the pulls over the certain floor, by reason."""
    out = {}
    for name, h in runs.items():
        if "+homing" in parse_variant(name).scheduler:
            each = [r["replacement_pulls_over_the_floor"] for r in h.get("repeats") or [h] if "replacement_pulls_over_the_floor" in r]
            if each:
                out[name] = each
    return out


COLUMNS = ("replacements", "home_rate", "feasible_home_rate", "replacement_pulls", "replacement_pull_minutes",
           "first_placement_pulls", "pulls", "pull_minutes", "gang_restarts", "create_to_scheduled_p50_s")


def code_line(code: dict) -> str:
    """One operator's code as the table's head names it."""
    where = "this tree" if code.get("this_tree") else "another checkout"
    dirty = " with uncommitted changes" if code.get("uncommitted_changes") else ""
    return f"{code.get('commit') or 'unknown'}{dirty} ({where})"


def table(data: dict) -> str:
    lines = [f"Operator code: {', '.join(code_line(c) for c in data['operator_code'])}", ""] if data.get("operator_code") else []
    for day_name, sizes in data["days"].items():
        for nodes, runs in sizes.items():
            lines += [f"### {day_name} day, {nodes} nodes ({DAYS[day_name].about})", "",
                      "| variant | repeats | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 2) + "|"]
            for name, r in runs.items():
                lines.append(f"| {name} | {len(r.get('repeats', []))} | " + " | ".join(str(r.get(c)) for c in COLUMNS) + " |")
            rule = home_rule_targets(runs)
            if rule:
                lines += ["", "The home rule, every run against its scheduler alone in the same repeat:", "",
                          "| homing variant | target | measured (each run) | met in every run |", "|---|---|---|---|"]
                lines += [f"| {c['variant']} | {c['target']} | {c['measured']} | {c['met']} |" for c in rule]
                over = over_the_floor(runs)
                if over:
                    lines += ["", "Re-placement pulls over the certain cold floor, each run, by what left no warm node "
                              "(the recorder's `over_the_floor`: a warm node left free that no waiting rank called home; "
                              "warm nodes taken in the same cycle by a pod of another image, of the same image, or going "
                              "to its own home; only waiting ranks' homes left):", "",
                              "| homing variant | each run |", "|---|---|"]
                    lines += [f"| {name} | {' · '.join(str(x) for x in each)} |" for name, each in over.items()]
            checks = targets(runs)
            if checks:
                lines += ["", "| homing variant | target | measured | met | floor (no placement avoids) |", "|---|---|---|---|---|"]
                lines += [f"| {c['variant']} | {c['target']} | {c['measured']} | {c['met']} | {c.get('floor', '')} |" for c in checks]
            lines += ["", "Per step (summed over the repeats): re-placements / home / feasible; why home was not "
                      "free; pulls (first placements, re-placements, and of those the cold ones — no node holding the image "
                      "could have taken the pod: as it bound – also counting the same cycle's binds; ? where the run did not "
                      "count it); gang restarts; training ranks with no node as the step ended (a gang not yet "
                      "brought back: its re-placements count in no rate); restarts stuck in Volcano's job controller that "
                      "the harness resumed (RestartJob command, not counted as restarts)", "",
                      "| variant | step | re-placements | home | feasible | home not free because | pulls first / re (cold) | restarts "
                      "| ranks not bound at the end | stuck restarts resumed |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for name, r in runs.items():
                phases = set().union(*(r.get(f) or {} for f in ("by_phase", "pulls_by_phase", "restarts_by_phase", "unbound_by_phase",
                                                                  "resumed_by_phase")))
                for step in sorted(phases, key=lambda p: STEPS.index(p) if p in STEPS else 99):
                    row = (r.get("by_phase") or {}).get(step, {})
                    pulls = (r.get("pulls_by_phase") or {}).get(step, {})
                    restarts = sum(((r.get("restarts_by_phase") or {}).get(step) or {}).values())
                    unbound, resumed = (", ".join(f"{job} {n}" for job, n in sorted(((r.get(f) or {}).get(step) or {}).items()))
                                        for f in ("unbound_by_phase", "resumed_by_phase"))
                    why = ", ".join(f"{k.split(':', 1)[1]} {n}" for k, n in sorted(row.items()) if k.startswith("blocked:"))
                    cold = "–".join(str(pulls.get(label, 0)) if measured else "?" for label, measured in (
                        ("cold-at-bind", "cold_at_bind_replacement_pulls" in r), ("cold", "cold_replacement_pulls" in r)))
                    lines.append(f"| {name} | {step} | {row.get('replacements', 0)} | {row.get('home', 0)} | "
                                 f"{row.get('feasible', 0)} | {why} | {pulls.get('first', 0)} / {pulls.get('replacement', 0)} "
                                 f"({cold}) | {restarts} | {unbound} | {resumed} |")
            lines.append("")
    return "\n".join(lines)


COLORS = ("#9aa5b1", "#5b8def", "#b07cc6", "#2e9e5b", "#1b6b3a", "#e0a030", "#d05050", "#50a0a0")


def chart(runs: dict, title: str) -> str:
    """Grouped bars: home rate, feasible home rate, pull minutes relative to plain Volcano."""
    base = runs.get("volcano") or next(iter(runs.values()))
    base_pull, base_all = base["replacement_pull_minutes"] or 1, base["pull_minutes"] or 1
    metrics = [("home rate", lambda r: r["home_rate"] or 0), ("feasible home rate", lambda r: r["feasible_home_rate"] or 0),
               ("re-placement pull min / Volcano's", lambda r: r["replacement_pull_minutes"] / base_pull),
               ("all pull min / Volcano's", lambda r: r["pull_minutes"] / base_all)]
    names = list(runs)
    bar_w, gap = 22, 40
    group = len(names) * (bar_w + 4) + gap
    left, bottom = 50, 250
    w, h = left + group * len(metrics) + 20, 300 + 16 * ((len(names) + 2) // 3)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="10">',
           f'<text x="{left}" y="16" font-size="13">{title} (higher is better, except pulls)</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{w - 10}" y2="{bottom}" stroke="black"/>']
    for g, (label, fn) in enumerate(metrics):
        x0 = left + 10 + g * group
        for i, name in enumerate(names):
            value = fn(runs[name])
            bar = max(0.0, min(1.2, value)) / 1.2 * 200
            x = x0 + i * (bar_w + 4)
            out.append(f'<rect x="{x}" y="{bottom - bar:.1f}" width="{bar_w}" height="{bar:.1f}" fill="{COLORS[i % len(COLORS)]}"/>')
            out.append(f'<text x="{x + bar_w / 2}" y="{bottom - bar - 4:.1f}" text-anchor="middle">{value:.2f}</text>')
        out.append(f'<text x="{x0 + group / 2 - gap / 2}" y="{bottom + 16}" text-anchor="middle">{label}</text>')
    for i, name in enumerate(names):
        x, y = left + (i % 3) * 220, bottom + 40 + 16 * (i // 3)
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{x + 16}" y="{y}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


def summarise(repeats: dict, nodes: int | None = None, code: list[dict] | None = None) -> dict:
    """The results file from every repeat measured so far. `nodes` and `repeats` at the top
    describe the runs held (the tidal day's smallest size unless `nodes` names one; the most
    repeats any variant holds), so a merged file says what it merged, not the defaults.
    `code`: the operator code that made the runs (operator_process.operator_code), one entry per
    distinct code; a worktree's operator or uncommitted changes are otherwise invisible in the file."""
    days: dict = {}
    for (day_name, size, variant), rs in repeats.items():
        days.setdefault(day_name, {}).setdefault(str(size), {})[variant] = medians(rs)
    sizes = sorted({size for (_, size, _) in repeats}) or [0]
    tidal_sizes = sorted(int(n) for n in days.get("tidal", {}))
    nodes = nodes if nodes is not None else (tidal_sizes or sizes)[0]
    first = days.get("tidal", {}).get(str(nodes), {})
    return {
        "nodes": nodes,
        "operator_code": code or [],
        "image_gb": sorted(IMAGES.values()),
        "bandwidth_gbps": BANDWIDTH_GBPS,
        "repeats": max((len(rs) for rs in repeats.values()), default=0),
        "days_about": {name: DAYS[name].about for name in days},
        "days_image_gb": {name: dict(DAYS[name].images) for name in days},
        "runs": first,
        "days": days,
        "targets": {day_name: {nodes: targets(runs) for nodes, runs in sizes.items()} for day_name, sizes in days.items()},
        "home_rule_targets": {day_name: {nodes: home_rule_targets(runs) for nodes, runs in sizes.items()}
                              for day_name, sizes in days.items()},
    }


def merge(paths: Iterable[Path]) -> dict:
    """One results file holding every repeat of the given ones, each variant's in file order."""
    merged: dict[tuple[str, int, str], list[dict]] = {}
    code: list[dict] = []
    for path in paths:
        data = json.loads(path.read_text())
        code += [c for c in data.get("operator_code", []) if c not in code]
        for day_name, sizes in data["days"].items():
            for nodes, runs in sizes.items():
                for variant, r in runs.items():
                    merged.setdefault((day_name, int(nodes), variant), []).extend(r["repeats"])
    return summarise(merged, code=code)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", nargs="+", default=list(DAYS), choices=list(DAYS))
    ap.add_argument("--superpods", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large-superpods", type=int, default=38)
    ap.add_argument("--large-repeats", type=int, default=1)
    ap.add_argument("--large-variants", nargs="+", help="default: the day's own (LARGE_VARIANTS, KUBE_VARIANTS)")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="redraw the table and chart from the results file")
    ap.add_argument("--variants", nargs="+",
                    help="default: the day's own (VARIANTS, KUBE_VARIANTS); also volcano+homing-no-<part> (parts: "
                    + ", ".join(ABLATIONS) + ")"
                    ", volcano+gangpreempt" + NOOP + " (a no-op webhook in homing's place), " + PATCHING
                    + " (one that patches, placing nothing), and any variant with a cluster setting's suffix ("
                    + ", ".join(SETTINGS) + ")")
    ap.add_argument("--out", default="tidal.json", help="results file under bench/results/")
    ap.add_argument("--merge", nargs="+", metavar="FILE", help="combine the repeats of earlier results files into --out")
    args = ap.parse_args()
    out = RESULTS / args.out
    if args.render_only:
        return render(json.loads(out.read_text()), out)
    if args.merge:
        data = merge(Path(p) for p in args.merge)
        dump(out, data)
        return render(data, out)
    build_binaries()
    plan = [(d, args.superpods, v) for d in args.days for _ in range(args.repeats)
            for v in args.variants or DAYS[d].variants]  # interleaved
    if not args.skip_large:
        plan += [(d, args.large_superpods, v) for d in args.days for _ in range(args.large_repeats)
                 for v in args.large_variants or DAYS[d].large_variants]
    repeats: dict[tuple[str, int, str], list[dict]] = {}
    code = [operator_code()]
    for day_name, superpods, variant in plan:
        try:
            result = await run(variant, day_name, superpods)
        except Exception as err:  # one broken run (a stuck scheduler, a port taken) must not lose the others
            log(f"  run failed: {type(err).__name__}: {err}")
            continue
        repeats.setdefault((day_name, superpods * NODES_PER_SUPERPOD, variant), []).append(result)
        dump(out, summarise(repeats, args.superpods * NODES_PER_SUPERPOD, code))
    render(summarise(repeats, args.superpods * NODES_PER_SUPERPOD, code), out)


def render(data: dict, out: Path) -> None:
    text = table(data)
    out.with_suffix(".md").write_text(text + "\n")
    if data.get("runs"):
        out.with_suffix(".svg").write_text(chart(data["runs"], f"Tidal day on Volcano, {data['nodes']} nodes"))
    print(text)
    print(f"wrote {out}, {out.with_suffix('.md').name}, {out.with_suffix('.svg').name}")


if __name__ == "__main__":
    asyncio.run(main())
