"""The scheduler a tidal cluster runs, behind one face: Volcano (its Jobs, queues and
scheduler.conf), Volcano with MindCluster's ascend-volcano-plugin compiled in (a
`+mindcluster` variant: Ascend nodes and NPU jobs as the plugin reads them), or
kube-scheduler 1.37 with its own gangs (Indexed Jobs in PodGroups). TidalCluster asks it
for the control plane's switches, starts it, dresses the nodes, and submits the day's
workloads through it; nothing else in the harness tells them apart."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from homing.cli.volcano_conf import INIT_PARAMS, MINDCLUSTER_PLUGIN_PREFIX, PREFER_PREVIOUS_NODE
from homing.config import Labels
from homing.kube.client import Kube
from homing_e2e import kube_gangs, objects as o
from homing_e2e.cluster import BIN_DIR, E2E_DIR, LocalControlPlane, free_port
from homing_e2e.modules import pinned_dir
from homing_e2e.operator_process import scrape
from homing_e2e.scheduler import PROFILE as SCHEDULER_PROFILE, config_text as scheduler_config_text

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
    binary: str | None = None  # of e2e/.bin; None: vc-scheduler
    release = ""  # the suite's pinned control plane
    apiserver_args: tuple[str, ...] = ()
    controller_manager_args: tuple[str, ...] = ()
    operator_env: dict[str, str] = {}  # homing's settings this scheduling's cluster calls for
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
        (conf_dir / "scheduler.conf").write_text(self.conf())
        await self.prepare(kube)
        k = f"--kubeconfig={cp.kubeconfig}"
        cp.run("vc-controller-manager", [k, "--leader-elect=false", f"--listen-address=127.0.0.1:{free_port()}",
                                         f"--healthz-address=127.0.0.1:{free_port()}"])
        self.metrics_port = free_port()
        cp.run("vc-scheduler", [k, f"--scheduler-conf={conf_dir / 'scheduler.conf'}", "--leader-elect=false", "--schedule-period=500ms",
                                "--enable-metrics", f"--listen-address=127.0.0.1:{self.metrics_port}",
                                f"--healthz-address=127.0.0.1:{free_port()}", *self.scheduler_args(), *self.args],
               binary=self.binary)
        if self.two_queues:
            for queue in yaml.safe_load_all((TIDAL_MANIFESTS / "queues" / "queues.yaml").read_text()):
                await kube.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", body=queue)

    def conf(self) -> str:
        return volcano_conf(self.variant, self.tide)

    def scheduler_args(self) -> tuple[str, ...]:
        return ()

    async def prepare(self, kube: Kube) -> None:
        """What must exist before the scheduler starts (nothing for plain Volcano)."""

    def decorate_node(self, body: dict, i: int, superpod: int, rack: int) -> None:
        """Adds to the i-th node's body (in that super-pod and rack) what this scheduling reads from a node (nothing here)."""

    async def nodes_ready(self, kube: Kube, names: list[str]) -> None:
        """Once every node is Ready: the objects that describe them beside the Node (none here)."""

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


# -- Volcano with MindCluster's ascend-volcano-plugin (docs/dev/mindcluster.md) ----------------

MINDCLUSTER = "+mindcluster"  # in a variant's name: Volcano with the plugin compiled in
NO_PREFER = "-noprefer"  # after it (`+mindcluster-noprefer`): the plugin with prefer-previous-node off
MINDCLUSTER_BIN = BIN_DIR / "mindcluster"  # e2e/build-mindcluster.sh writes vc-scheduler, plugin-name, the shipped yaml
MINDCLUSTER_SRC = Path(os.environ.get("HOMING_MINDCLUSTER_SRC")
                       or E2E_DIR.parent.parent / "shared" / "third_party" / "mind-cluster" / "ascend-for-volcano")
MINDCLUSTER_OVERLAY = E2E_DIR.parent / "manifests" / "mindcluster" / "kustomization.yaml"
SHIPPED = "shipped"  # the tide that runs the plugin's shipped scheduler.conf as it is (enqueue, allocate, backfill)
MINDX_NS, DEVICE_INFO_NS, VOLCANO_NS = "mindx-dl", "kube-system", "volcano-system"
CHIPS = tuple(f"Ascend910-{i}" for i in range(8))  # a 910B node's chips, as the device plugin names them
# What MindCluster's 910B examples put on a node and select in a pod (accelerator: the plugin's
# chip kind; accelerator-type: its policy handler, 8 chips a node; host-arch: only selected)
NODE_LABELS = {"accelerator": "huawei-Ascend910", "accelerator-type": "module-910b-8", "host-arch": "huawei-arm"}
NODE_SELECTOR = {"accelerator-type": "module-910b-8", "host-arch": "huawei-arm"}
JOB_LABELS = {"ring-controller.atlas": "ascend-910b"}
MIN_AVAILABLE = "huawei.com/schedule_minAvailable"  # on a Deployment's pods: the plugin gangs that many, else all replicas
# A super-pod job as the plugin takes one on these 8-chip nodes: its chip8-node8-sp policy, in
# blocks of `sp-block` chips inside one super-pod, on the job (copied to its PodGroup) and its pods.
SCHEDULE_POLICY = "huawei.com/schedule_policy"
SUPERPOD_POLICY = "chip8-node8-sp"
CM_CONSUMER = "mx-consumer-cim"  # the label the plugin's informer selects per-node ConfigMaps by (device-plugin mode)
CLUSTERD_CONSUMER = "mx-consumer-volcano"  # ... ClusterD's cluster-info ConfigMaps by (ClusterD mode, shipped)
CLUSTERD_NODES_PER_CM = 100


def mindcluster_missing() -> str | None:
    """Why a `+mindcluster` run cannot start here, or None: the plugin's source beside the
    repository, then the scheduler built from it."""
    if not (MINDCLUSTER_SRC / "npu.go").is_file():
        return f"MindCluster's plugin source not found at {MINDCLUSTER_SRC} (../shared beside the repository)"
    if not (MINDCLUSTER_BIN / "vc-scheduler").is_file():
        return f"{MINDCLUSTER_BIN / 'vc-scheduler'} not built: run e2e/build-mindcluster.sh"
    return None


def build_mindcluster() -> str | None:
    """Builds (or finds built) the scheduler with the plugin; the reason it cannot run here, or None."""
    subprocess.run(["bash", str(E2E_DIR / "build-mindcluster.sh")], check=True)
    return mindcluster_missing()


def plugin_name() -> str:
    return (MINDCLUSTER_BIN / "plugin-name").read_text().strip()


def shipped_conf() -> dict:
    """The volcano-scheduler.conf of the plugin's volcano-v1.15.0.yaml (its scheduler ConfigMap),
    the plugin's tier entry named as the build registered it (build.sh renames it the same way)."""
    for doc in yaml.safe_load_all((MINDCLUSTER_BIN / "volcano-v1.15.0.yaml").read_text()):
        text = ((doc or {}).get("data") or {}).get("volcano-scheduler.conf")
        if text:
            conf = yaml.safe_load(text)
            for plugin in (p for tier in conf["tiers"] for p in tier["plugins"] if p["name"].startswith(MINDCLUSTER_PLUGIN_PREFIX)):
                plugin["name"] = plugin_name()
            return conf
    raise ValueError("no volcano-scheduler.conf in the plugin's volcano-v1.15.0.yaml")


def mindcluster_conf(variant: str, tide: str) -> str:
    """The scheduler.conf of a `+mindcluster` variant. On the `shipped` tide the plugin's own
    configuration as it ships; on a tidal tide (preempt, reclaim, gang…) the tide's
    configuration (manifests/tidal) with the plugin's tier entry after gang, as shipped, and
    its init-params (prefer-previous-node on, off in a `-noprefer` variant: the plugin still
    places the chips, homing alone steers the nodes). A homing variant raises nodeorder's
    nodeaffinity.weight to homing's 10 either way (docs/scheduler-settings.md)."""
    shipped = shipped_conf()
    if NO_PREFER in variant:
        for params in (c["arguments"] for c in shipped.get("configurations", []) if c.get("name") == INIT_PARAMS):
            params[PREFER_PREVIOUS_NODE] = "false"
    if tide == SHIPPED:
        conf = shipped
        if "homing" in variant:
            for plugin in (p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "nodeorder"):
                plugin["arguments"] = {**(plugin.get("arguments") or {}), "nodeaffinity.weight": 10}
        return yaml.safe_dump(conf, sort_keys=False)
    conf = yaml.safe_load(volcano_conf(variant, tide))
    entry = next(p for tier in shipped["tiers"] for p in tier["plugins"] if p["name"] == plugin_name())
    first = conf["tiers"][0]["plugins"]
    at = next((i + 1 for i, p in enumerate(first) if p["name"] == "gang"), len(first))
    first.insert(at, copy.deepcopy(entry))
    conf["configurations"] = [*shipped.get("configurations", []), *conf.get("configurations", [])]
    return yaml.safe_dump(conf, sort_keys=False)


def overlay_env() -> dict[str, str]:
    """homing's settings in the manifests/mindcluster overlay (the env its patch adds)."""
    env = {}
    for patch in yaml.safe_load(MINDCLUSTER_OVERLAY.read_text()).get("patches") or ():
        for op in yaml.safe_load(patch.get("patch") or "[]") or ():
            value = op.get("value")
            if op.get("op") == "add" and str(op.get("path", "")).endswith("/env/-") and isinstance(value, dict):
                env[value["name"]] = str(value["value"])
    return env


class MindClusterVolcano(Volcano):
    """Volcano's scheduler with MindCluster's plugin compiled in (e2e/build-mindcluster.sh),
    on nodes the plugin believes: 8 Ascend910 chips each, the labels and chip annotation the
    device plugin sets, device-info ConfigMaps per node (what homing's overlay reads) and as
    ClusterD publishes them (what the plugin reads with its shipped useClusterInfoManager),
    NodeD's node info. Training jobs are the NPU jobs of MindCluster's examples."""

    binary: str | None = "mindcluster/vc-scheduler"
    plugin = True  # the scheduler built with it (AscendVolcano runs these nodes without)

    def __init__(self, variant: str, tide: str, args: tuple[str, ...] = ()) -> None:
        super().__init__(variant, tide, args)
        if self.plugin and (missing := mindcluster_missing()):
            raise RuntimeError(missing)
        self.operator_env = overlay_env()  # homing as on a MindCluster cluster (manifests/mindcluster)
        self.ids: dict[str, tuple[int, int]] = {}  # node -> (super-pod id, rack id), as its device info says

    def conf(self) -> str:
        return mindcluster_conf(self.variant, self.tide)

    def scheduler_args(self) -> tuple[str, ...]:
        # as the plugin's yaml starts vc-scheduler (its other flags: logging, rates, the period the harness sets)
        return ("--percentage-nodes-to-find=100",)

    async def prepare(self, kube: Kube) -> None:
        for ns in (MINDX_NS, VOLCANO_NS):  # the plugin writes ConfigMaps in both (its caches, reschedule reasons)
            await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns}})

    def decorate_node(self, body: dict, i: int, superpod: int, rack: int) -> None:
        meta, status = body["metadata"], body["status"]
        self.ids[meta["name"]] = (superpod, rack)
        labels = meta["labels"]
        labels.update(NODE_LABELS)
        topology = (Labels().superpod, Labels().rack)
        for key in topology:  # homing copies the ids from device info (its overlay); else set as it would
            labels.pop(key, None)
        if "homing" not in self.variant:
            labels.update(zip(topology, (str(superpod), str(rack))))
        meta["annotations"]["baseDeviceInfos"] = json.dumps(
            {chip: {"IP": f"10.{i >> 8 & 255}.{i & 255}.{c + 1}", "SuperDeviceID": 0} for c, chip in enumerate(CHIPS)},
            separators=(",", ":"))
        status["addresses"] = [{"type": "InternalIP", "address": f"172.16.{i >> 8 & 255}.{i & 255}"},
                               {"type": "Hostname", "address": meta["name"]}]

    async def nodes_ready(self, kube: Kube, names: list[str]) -> None:
        """The device plugin's and NodeD's ConfigMaps per node, and ClusterD's digest of them."""
        now = int(time.time())
        device_list = {"huawei.com/Ascend910": ",".join(CHIPS), "huawei.com/Ascend910-Unhealthy": "",
                       "huawei.com/Ascend910-NetworkUnhealthy": ""}
        digest: dict[str, dict] = {}
        for name in names:
            superpod, rack = self.ids[name]
            info = {"DeviceList": device_list, "UpdateTime": now}
            text = json.dumps(info, separators=(",", ":"))
            cfg = {"DeviceInfo": info, "CheckCode": hashlib.sha256(text.encode()).hexdigest(), "SuperPodID": superpod, "RackID": rack}
            await create_configmap(kube, DEVICE_INFO_NS, f"mindx-dl-deviceinfo-{name}", {CM_CONSUMER: "true"},
                                   {"DeviceInfoCfg": json.dumps(cfg)})
            nodeinfo = {"NodeInfo": {"FaultDevList": [], "NodeStatus": "Healthy"}, "CheckCode": ""}
            await create_configmap(kube, MINDX_NS, f"mindx-dl-nodeinfo-{name}", {CM_CONSUMER: "true"}, {"NodeInfo": json.dumps(nodeinfo)})
            digest[f"mindx-dl-deviceinfo-{name}"] = {**info, "CacheUpdateTime": now, "SuperPodID": superpod, "RackID": rack}
        items = list(digest.items())
        for n, at in enumerate(range(0, len(items), CLUSTERD_NODES_PER_CM)):
            cm = f"cluster-info-device-{n}"
            await create_configmap(kube, MINDX_NS, cm, {CLUSTERD_CONSUMER: "true"},
                                   {cm: json.dumps(dict(items[at:at + CLUSTERD_NODES_PER_CM]))})

    def training(self, name: str, ns: str, replicas: int, image: str, annotations: dict[str, str]) -> list[tuple[str, dict]]:
        """Volcano's training job as MindCluster's examples write one: the product label on the
        job and its pods, the node selector, the NPUs requested, and Volcano's env plugin
        (VC_TASK_INDEX, the rank the plugin remembers nodes by). A job asked for with the
        super-pod policy (SCHEDULE_POLICY) carries it and its `sp-block` on the job and its
        pods; any other job no `sp-block`: on these 910B nodes it alone would make the plugin
        take the job for an A3 super-pod job."""
        [(path, body)] = super().training(name, ns, replicas, image, annotations)
        body["metadata"]["labels"] = dict(JOB_LABELS)
        body["spec"]["plugins"] = {"env": []}
        template = body["spec"]["tasks"][0]["template"]
        if annotations.get(SCHEDULE_POLICY) == SUPERPOD_POLICY:
            body["metadata"]["annotations"] = dict(annotations)
        else:
            template["metadata"]["annotations"] = {k: v for k, v in template["metadata"]["annotations"].items() if k != "sp-block"}
        template["metadata"]["labels"] = dict(JOB_LABELS)
        npu_pod(template["spec"])
        return [(path, body)]

    def replica_template(self, image: str) -> dict:
        """An inference replica placed one by one (the plugin would otherwise gang all replicas)."""
        template = super().replica_template(image)
        template["metadata"]["annotations"][MIN_AVAILABLE] = "1"
        npu_pod(template["spec"])
        return template


ASCEND = "+ascend"  # in a variant's name: stock Volcano on the nodes and jobs of `+mindcluster`


class AscendVolcano(MindClusterVolcano):
    """Volcano as it ships, without the plugin, on the same Ascend nodes, ConfigMaps and NPU
    jobs as MindClusterVolcano, and homing (if the variant has it) with the same overlay: the
    plugin is the only difference, so a `volcano+ascend+homing` run says what homing does on a
    MindCluster cluster's objects by itself (issue 43's `volcano+homing` on the same nodes).
    The scheduler still scores every node (`--percentage-nodes-to-find=100`, as the plugin's
    yaml starts it)."""

    binary = None
    plugin = False

    def conf(self) -> str:
        return volcano_conf(self.variant, self.tide)


def npu_pod(spec: dict) -> None:
    spec["nodeSelector"] = dict(NODE_SELECTOR)
    for container in spec["containers"]:
        resources = container["resources"]
        resources["requests"] = dict(resources["limits"])


async def create_configmap(kube: Kube, ns: str, name: str, labels: dict[str, str], data: dict[str, str]) -> None:
    await kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                       body={"metadata": {"name": name, "namespace": ns, "labels": labels}, "data": data})


class KubeSchedulerGangs:
    """kube-scheduler 1.37 with its own gangs and the control plane of that release; the
    tide is the PodGroups' disruption mode (evicted whole, or pod by pod)."""

    process = "kube-scheduler"
    release = kube_gangs.RELEASE
    operator_env: dict[str, str] = {}
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

    def decorate_node(self, body: dict, i: int, superpod: int, rack: int) -> None:
        pass

    async def nodes_ready(self, kube: Kube, names: list[str]) -> None:
        pass

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
    """A variant named `kube-scheduler…` runs kube-scheduler's gangs; one with `+mindcluster`,
    Volcano with MindCluster's plugin; one with `+ascend`, Volcano without it on the plugin's
    nodes and jobs; any other, Volcano."""
    if variant.startswith("kube-scheduler"):
        return KubeSchedulerGangs(variant, tide, args)
    if ASCEND in variant:
        return AscendVolcano(variant, tide, args)
    return (MindClusterVolcano if MINDCLUSTER in variant else Volcano)(variant, tide, args)
