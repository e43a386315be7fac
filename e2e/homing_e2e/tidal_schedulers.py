"""The scheduler a tidal cluster runs, behind one face: Volcano (its Jobs, queues and
scheduler.conf) or kube-scheduler 1.37 with its own gangs (Indexed Jobs in PodGroups).
TidalCluster asks it for the control plane's switches, starts it, and submits the
day's workloads through it; nothing else in the harness tells the two apart."""
from __future__ import annotations

from pathlib import Path

import yaml

from homing.kube.client import Kube
from homing_e2e import kube_gangs
from homing_e2e import objects as o
from homing_e2e.cluster import E2E_DIR, LocalControlPlane, free_port
from homing_e2e.modules import pinned_dir
from homing_e2e.operator_process import scrape
from homing_e2e.scheduler import PROFILE as SCHEDULER_PROFILE
from homing_e2e.scheduler import config_text as scheduler_config_text

NPU = "huawei.com/Ascend910"
TIDAL_MANIFESTS = E2E_DIR.parent / "manifests" / "tidal"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
RECLAIM_TIDES = ("reclaim", "gangreclaim")  # two queues: inference reclaims from training
TRAINING_PRIORITY, INFERENCE_PRIORITY = "training-low", "inference-high"
VOLCANO_JOB_LABEL = "volcano.sh/job-name"  # on every pod the Volcano job controller creates
# A Volcano Job left in Restarting with no pod this long is stuck for good (Volcano.resume_stuck)
STUCK_RESTART_S = 10.0


def pod_spec(scheduler: str, priority: str, container: str, image: str) -> dict:
    """A pod of the days: one container asking for a whole node's 8 NPUs, stopped at once."""
    return {"schedulerName": scheduler, "priorityClassName": priority, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": container, "image": image, "resources": {"limits": {NPU: "8"}}}]}


def every_rank(ranks: dict[str, set[str]], gang_sizes: dict[str, int]) -> bool:
    """Each job of `gang_sizes` has all its ranks in `ranks` (job -> rank names)."""
    return all(len(ranks.get(job, ())) >= n for job, n in gang_sizes.items())


def volcano_conf(variant: str, tide: str = "preempt") -> str:
    """The shipped volcano-scheduler.conf of the tide (manifests/tidal, behaviour.md "Operation"), with
    nodeorder's arguments set for the run: homing's weight and/or image locality's, or
    none (Volcano's defaults)."""
    conf = yaml.safe_load((TIDAL_MANIFESTS / tide / "volcano-scheduler.conf").read_text())
    args = {}
    if "imagelocality" in variant:
        args["imagelocality.weight"] = 10
    if "homing" in variant:
        args["nodeaffinity.weight"] = 10
    for plugin in (p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "nodeorder"):
        plugin.pop("arguments", None)
        if args:
            plugin["arguments"] = args
    return yaml.safe_dump(conf, sort_keys=False)


class Volcano:
    """Volcano's scheduler and controller manager; training as Volcano Jobs that restart
    whole on an eviction; the tide picks one queue (preempt) or two (reclaim)."""

    process = "vc-scheduler"
    release = ""  # the suite's pinned control plane
    apiserver_args: tuple[str, ...] = ()
    controller_manager_args: tuple[str, ...] = ()
    jobs_path = "/apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs"
    podgroups_path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"

    def __init__(self, variant: str, tide: str, args: tuple[str, ...] = ()) -> None:
        self.variant, self.tide, self.args = variant, tide, args
        self.stuck_since: dict[str, float] = {}  # job -> when first seen stuck in Restarting (resume_stuck)
        self.metrics_port = 0  # vc-scheduler's /metrics, once started

    @property
    def two_queues(self) -> bool:
        return self.tide in RECLAIM_TIDES

    async def start(self, cp: LocalControlPlane, kube: Kube, workdir: Path) -> None:
        vc = pinned_dir("volcano", "volcano.sh/volcano")
        for folder in ("config/crd/volcano/bases", "config/crd/jobflow/bases"):
            for path in sorted((vc / folder).glob("*.yaml")):
                await o.install_crd(kube, yaml.safe_load(path.read_text()))
        conf_dir = workdir / "volcano-conf"  # a folder of its own: the scheduler watches it
        conf_dir.mkdir()
        (conf_dir / "scheduler.conf").write_text(volcano_conf(self.variant, self.tide))
        k = f"--kubeconfig={cp.kubeconfig}"
        cp.run("vc-controller-manager", [k, "--leader-elect=false", f"--listen-address=127.0.0.1:{free_port()}",
                                         f"--healthz-address=127.0.0.1:{free_port()}"])
        self.metrics_port = free_port()
        cp.run("vc-scheduler", [k, f"--scheduler-conf={conf_dir / 'scheduler.conf'}", "--leader-elect=false", "--schedule-period=500ms",
                                "--enable-metrics", f"--listen-address=127.0.0.1:{self.metrics_port}",
                                f"--healthz-address=127.0.0.1:{free_port()}", *self.args])
        if self.two_queues:
            for queue in yaml.safe_load_all((TIDAL_MANIFESTS / "queues" / "queues.yaml").read_text()):
                await kube.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", body=queue)

    def metrics(self) -> str:
        """vc-scheduler's /metrics (its session and action latencies); "" where it does not answer."""
        return scrape(self.metrics_port)

    def training(self, name: str, ns: str, replicas: int, image: str, annotations: dict[str, str]) -> list[tuple[str, dict]]:
        """The objects to create for one gang, as (collection path, body)."""
        spec = pod_spec("volcano", TRAINING_PRIORITY, "train", image)
        body = {
            "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {
                "schedulerName": "volcano", "minAvailable": replicas, "priorityClassName": TRAINING_PRIORITY,
                "maxRetry": 1000,  # Volcano's default 3 fails a job on its fourth eviction: one tidal day does that
                **({"queue": "training"} if self.two_queues else {}),
                "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                "tasks": [{"name": "worker", "replicas": replicas, "template": {"metadata": {"annotations": annotations}, "spec": spec}}],
            },
        }
        return [(self.jobs_path.format(ns=ns), body)]

    def replica_template(self, image: str) -> dict:
        """An inference replica's pod template (metadata and spec, without labels)."""
        ann = {QUEUE_ANNOTATION: "inference"} if self.two_queues else {}
        return {"metadata": {"annotations": ann}, "spec": pod_spec("volcano", INFERENCE_PRIORITY, "serve", image)}

    def step_over(self, live_ranks: dict[str, set[str]], gang_sizes: dict[str, int]) -> bool:
        return True  # Volcano re-creates an evicted gang at once: nothing to wait for

    async def restarts_by_job(self, kube: Kube, ns: str, rank_losses: dict[str, list[float]]) -> dict[str, int]:
        """Training jobs restarted whole, as Volcano counts them in status.retryCount. The harness's
        own RestartJob Commands (resume_stuck) add none: they reach a job still in Restarting,
        whose state counts no restart (the job controller's restarting state), so nothing is
        taken off for them."""
        jobs = await kube.request("GET", self.jobs_path.format(ns=ns))
        return {j["metadata"]["name"]: int((j.get("status") or {}).get("retryCount") or 0) for j in jobs.get("items") or ()}

    async def resume_stuck(self, kube: Kube, ns: str, now: float) -> list[str]:
        """Volcano 1.15.1's job controller can leave a restarted gang in Restarting for good:
        its PodGroup deleted, its pods gone, yet its status still counting pods terminating, and
        no event left to recount them (seen on the gang-aware days and after a node fault).
        The harness then does what a cluster's operator would: a RestartJob Command, which
        recounts and brings the gang back. Returns the jobs resumed now (`now`: monotonic)."""
        jobs = await kube.request("GET", self.jobs_path.format(ns=ns))
        pods = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", VOLCANO_JOB_LABEL)])
        with_pods = {(p["metadata"].get("labels") or {}).get(VOLCANO_JOB_LABEL) for p in pods.get("items") or ()}
        resumed = []
        for job in jobs.get("items") or ():
            name, status = job["metadata"]["name"], job.get("status") or {}
            if not stuck_restart(status, name in with_pods):
                self.stuck_since.pop(name, None)
                continue
            if now - self.stuck_since.setdefault(name, now) >= STUCK_RESTART_S:
                await kube.request("POST", f"/apis/bus.volcano.sh/v1alpha1/namespaces/{ns}/commands", body=restart_command(job))
                self.stuck_since.pop(name)
                resumed.append(name)
        return resumed


def stuck_restart(status: dict, has_pods: bool) -> bool:
    """A Volcano Job waiting in Restarting for pods to go that are gone already."""
    return (status.get("state") or {}).get("phase") == "Restarting" and not has_pods and int(status.get("terminating") or 0) > 0


def restart_command(job: dict) -> dict:
    """The bus Command that asks Volcano's job controller to restart `job`."""
    meta = job["metadata"]
    ref = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": meta["name"], "uid": meta["uid"]}
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
            "metadata": {"generateName": f"{meta['name']}-resume-", "namespace": meta["namespace"],
                         "ownerReferences": [{**ref, "controller": True}]},
            "action": "RestartJob", "target": ref}


class KubeSchedulerGangs:
    """kube-scheduler 1.37 with its own gangs and the control plane of that release; the
    tide is the PodGroups' disruption mode (evicted whole, or pod by pod)."""

    process = "kube-scheduler"
    release = kube_gangs.RELEASE
    apiserver_args = kube_gangs.APISERVER_ARGS
    controller_manager_args = kube_gangs.CONTROLLER_MANAGER_ARGS
    jobs_path = "/apis/batch/v1/namespaces/{ns}/jobs"
    podgroups_path = kube_gangs.PODGROUPS_PATH

    def __init__(self, variant: str, tide: str, args: tuple[str, ...] = ()) -> None:
        # a Volcano tide's name means the default: kube-scheduler has one preemption, the gang evicted whole
        if args:
            raise ValueError(f"Volcano's flags given to kube-scheduler: {args}")
        self.variant, self.tide = variant, tide if tide in kube_gangs.DISRUPTION_MODES else "all"

    def metrics(self) -> str:
        return ""  # kube-scheduler serves /metrics only on its authenticated port: not read

    async def start(self, cp: LocalControlPlane, kube: Kube, workdir: Path) -> None:
        config = workdir / "kube-scheduler.yaml"  # the profile homing ships (manifests/kube-scheduler)
        config.write_text(scheduler_config_text(cp.kubeconfig))
        cp.run("kube-scheduler", [f"--config={config}", "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--v=1",
                                  *kube_gangs.SCHEDULER_ARGS], binary=f"{self.release}/kube-scheduler")

    def training(self, name: str, ns: str, replicas: int, image: str, annotations: dict[str, str]) -> list[tuple[str, dict]]:
        spec = pod_spec(SCHEDULER_PROFILE, TRAINING_PRIORITY, "train", image)
        return [(self.podgroups_path.format(ns=ns), kube_gangs.pod_group(name, ns, replicas, TRAINING_PRIORITY, self.tide)),
                (self.jobs_path.format(ns=ns), kube_gangs.indexed_job(name, ns, replicas, spec, annotations))]

    def replica_template(self, image: str) -> dict:
        return {"metadata": {"annotations": {}}, "spec": pod_spec(SCHEDULER_PROFILE, INFERENCE_PRIORITY, "serve", image)}

    def step_over(self, live_ranks: dict[str, set[str]], gang_sizes: dict[str, int]) -> bool:
        """Every rank exists again: a Job re-creates an evicted rank only after its index's back-off."""
        return every_rank(live_ranks, gang_sizes)

    async def restarts_by_job(self, kube: Kube, ns: str, rank_losses: dict[str, list[float]]) -> dict[str, int]:
        return {job: kube_gangs.disruptions(times) for job, times in rank_losses.items()}  # kube-scheduler keeps no count

    async def resume_stuck(self, kube: Kube, ns: str, now: float) -> list[str]:
        return []  # the Job controller re-creates an evicted index after its back-off: nothing gets stuck that way


def scheduling_for(variant: str, tide: str, args: tuple[str, ...] = ()) -> Volcano | KubeSchedulerGangs:
    """A variant named `kube-scheduler…` runs kube-scheduler's gangs; any other, Volcano."""
    kind = KubeSchedulerGangs if variant.startswith("kube-scheduler") else Volcano
    return kind(variant, tide, args)
