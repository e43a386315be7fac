"""Every framework's pods go home: the real LeaderWorkerSet and JobSet
controllers (built from their Go modules) create the pods, a LWS group restart and a
failed JobSet's recreated Jobs land on their old nodes under kube-scheduler. PyTorchJob
and KubeRay pods are shaped exactly as their controllers write them (their controllers
are not built here), owned by real objects of their CRDs read from the module cache."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from homing.kube.client import MERGE_PATCH
from homing.placementmemory import merge, read_object
from homing_e2e import framework_pods as fp, frameworks, objects as o
from homing_e2e.scheduler import PROFILE, KubeScheduler

pytestmark = pytest.mark.cluster
POOL = "e2e.homing.io/pool"
NODES = 10  # two pods of a group coming back to both their nodes by chance: 1 in 56 or less
KUBEFLOW = ("github.com/kubeflow/training-operator", "v1.9.2", "manifests/base/crds/kubeflow.org_pytorchjobs.yaml")
KUBERAY = ("github.com/ray-project/kuberay/ray-operator", "v1.5.0", "config/crd/bases/ray.io_rayclusters.yaml")


@pytest.fixture(scope="module")
def kube_scheduler(kubeconfig):
    sched = KubeScheduler(kubeconfig, Path(tempfile.mkdtemp(prefix="homing-ks-"))).start()
    yield sched
    sched.stop()


async def _controller(kubeconfig: Path, kube, make) -> frameworks.Framework:
    frameworks.build()
    ctl = make()
    await ctl.install_crds(kube)
    ctl.start(kubeconfig, Path(tempfile.mkdtemp(prefix=f"homing-{ctl.name}-")))
    await ctl.serving()
    await ctl.register_webhooks(kube)
    return ctl


@pytest.fixture(scope="module")
async def lws_controller(kubeconfig, kube):
    ctl = await _controller(kubeconfig, kube, frameworks.leaderworkerset)
    yield ctl
    await ctl.stop(kube)


@pytest.fixture(scope="module")
async def jobset_controller(kubeconfig, kube):
    ctl = await _controller(kubeconfig, kube, frameworks.jobset)
    yield ctl
    await ctl.stop(kube)


@pytest.fixture
async def fw_ns(kube, ns) -> str:
    """An opted-in namespace that the frameworks' webhooks serve, with its own nodes."""
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}", body={"metadata": {"labels": {frameworks.FRAMEWORK_LABEL: "true"}}},
                       content_type=MERGE_PATCH)
    for i in range(NODES):
        await o.node(kube, f"n{i}-{ns}", labels={POOL: ns})
    return ns


def _spec(ns: str, restart: str = "Always") -> dict:
    return {
        "schedulerName": PROFILE,
        "nodeSelector": {POOL: ns},  # only this test's nodes
        "containers": [o.container(npus=8)],  # a whole node each
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 0,
        "restartPolicy": restart,
    }


async def _pods(kube, ns: str, selector: str) -> list[dict]:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", selector)])
    return [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]


async def _placed(kube, ns: str, selector: str, rank_of, count: int, not_uids: frozenset = frozenset()) -> dict[str, dict]:
    """rank -> pod, once `count` live pods (none of `not_uids`) are bound and running."""
    async def check():
        pods = [p for p in await _pods(kube, ns, selector) if p["metadata"]["uid"] not in not_uids]
        if len(pods) == count and all(p["spec"].get("nodeName") and p["status"].get("phase") == "Running" for p in pods):
            return {rank_of(p): p for p in pods}
        return None

    return await o.eventually(check, timeout=120, what=f"{count} pods of {selector} running")


async def _remembered(kube, ns: str, kind: str, ranks: set[str]) -> None:
    """The only PlacementMemory in `ns` is the `kind` owner's, with these ranks (or pool nodes)."""
    async def check():
        mems = await o.placement_memories(kube, ns)
        if not mems or not all(m.get("status") for m in mems):  # created first, its status written next
            return None
        mem = merge([read_object(m) for m in mems])
        got = set(mem.ranks) or set(mem.pool)
        return mem if mem.owner.kind == kind and got == ranks and len({m["metadata"]["name"] for m in mems}) == 1 else None

    await o.eventually(check, timeout=60, what=f"{kind} memory of {sorted(ranks)}")


def _nodes(placed: dict[str, dict]) -> dict[str, str]:
    return {rank: p["spec"]["nodeName"] for rank, p in placed.items()}


def _lws_rank(pod: dict) -> str:
    labels = pod["metadata"]["labels"]
    return f"{labels['leaderworkerset.sigs.k8s.io/group-index']}/{labels['leaderworkerset.sigs.k8s.io/worker-index']}"


async def test_leaderworkerset_group_restart_lands_home(kube, operator, kube_scheduler, lws_controller, fw_ns):
    ns = fw_ns
    body = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "vllm"},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": _spec(ns)}}}}
    await kube.request("POST", f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets", body=body)
    selector = "leaderworkerset.sigs.k8s.io/name=vllm"
    first = await _placed(kube, ns, selector, _lws_rank, 4)
    await _remembered(kube, ns, "LeaderWorkerSet", {"0/0", "0/1", "1/0", "1/1"})
    group0 = frozenset(p["metadata"]["uid"] for r, p in first.items() if r.startswith("0/"))
    # What LWS does on a group restart: delete the leader; its worker StatefulSet goes with it.
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/vllm-0", body={"gracePeriodSeconds": 0})
    again = await _placed(kube, ns, f"{selector},leaderworkerset.sigs.k8s.io/group-index=0", _lws_rank, 2, group0)
    assert _nodes(again) == {r: n for r, n in _nodes(first).items() if r.startswith("0/")}
    for rank, pod in again.items():
        assert o.home(pod) == pod["spec"]["nodeName"], f"rank {rank} was not sent home by homing"
    await _remembered(kube, ns, "LeaderWorkerSet", {"0/0", "0/1", "1/0", "1/1"})  # no StatefulSet memory


def _jobset_rank(pod: dict) -> str:
    labels = pod["metadata"]["labels"]
    return "/".join(labels[k] for k in ("jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index",
                                        "batch.kubernetes.io/job-completion-index"))


async def test_failed_jobset_job_is_recreated_on_its_old_nodes(kube, operator, kube_scheduler, jobset_controller, fw_ns):
    ns = fw_ns
    job = {"parallelism": 2, "completions": 2, "backoffLimit": 0, "completionMode": "Indexed",
           "template": {"spec": _spec(ns, restart="Never")}}
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train"},
            "spec": {"failurePolicy": {"maxRestarts": 2},
                     "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": job}}]}}
    await kube.request("POST", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", body=body)
    selector = "jobset.sigs.k8s.io/jobset-name=train"
    first = await _placed(kube, ns, selector, _jobset_rank, 4)
    ranks = {"workers/0/0", "workers/0/1", "workers/1/0", "workers/1/1"}
    await _remembered(kube, ns, "JobSet", ranks)
    failed = first["workers/1/0"]["metadata"]["name"]  # what the kubelet reports when its container exits 1
    status = {"status": {"phase": "Failed", "containerStatuses": [{
        "name": "main", "image": "registry.invalid/train:15g", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{failed}/status", body=status, content_type=MERGE_PATCH)
    again = await _placed(kube, ns, f"{selector},jobset.sigs.k8s.io/restart-attempt=1", _jobset_rank, 4)
    assert _nodes(again) == _nodes(first)
    await _remembered(kube, ns, "JobSet", ranks)


async def _crd_object(kube, ns: str, module: tuple[str, str, str], plural: str, body: dict) -> dict:
    name, version, crd = module
    await o.install_crd(kube, frameworks.load_yaml(frameworks.module_dir(name, version) / crd))
    group, api_version = body["apiVersion"].split("/")
    return await kube.request("POST", f"/apis/{group}/{api_version}/namespaces/{ns}/{plural}", body=body)


async def _create(kube, ns: str, pod: dict) -> None:
    pod["spec"] = _spec(ns, restart="Never")
    del pod["metadata"]["uid"], pod["metadata"]["namespace"]  # the API server's to set
    await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=pod)


async def test_pytorchjob_pod_replacement_lands_home(kube, operator, kube_scheduler, fw_ns):
    ns = fw_ns
    job = await _crd_object(kube, ns, KUBEFLOW, "pytorchjobs", {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "bert"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": [o.container(8)]}}},
                                         "Worker": {"replicas": 2, "template": {"spec": {"containers": [o.container(8)]}}}}}})
    uid = job["metadata"]["uid"]
    for rtype, index in (("Master", 0), ("Worker", 0), ("Worker", 1)):
        await _create(kube, ns, fp.pytorchjob_pod(ns, "bert", uid, rtype, index))

    def rank(pod):
        labels = pod["metadata"]["labels"]
        return f"{labels['training.kubeflow.org/replica-type']}/{labels['training.kubeflow.org/replica-index']}"

    selector = "training.kubeflow.org/job-name=bert"
    first = await _placed(kube, ns, selector, rank, 3)
    await _remembered(kube, ns, "PyTorchJob", {"master/0", "worker/0", "worker/1"})
    old = first["worker/1"]
    await o.delete_pod(kube, ns, old["metadata"]["name"])  # the controller recreates a failed replica by name
    await _create(kube, ns, fp.pytorchjob_pod(ns, "bert", uid, "Worker", 1))
    again = await _placed(kube, ns, selector, rank, 3, frozenset({old["metadata"]["uid"]}))
    assert again["worker/1"]["spec"]["nodeName"] == old["spec"]["nodeName"]


async def test_ray_worker_group_scale_out_lands_on_its_old_nodes(kube, operator, kube_scheduler, fw_ns):
    ns = fw_ns
    cluster = await _crd_object(kube, ns, KUBERAY, "rayclusters", {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}},
                 "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 0, "maxReplicas": 4, "rayStartParams": {},
                                       "template": {"spec": {"containers": [o.container(8)]}}}]}})
    uid = cluster["metadata"]["uid"]
    selector = "ray.io/cluster=rc,ray.io/group=gpu"
    for _ in range(2):
        await _create(kube, ns, fp.ray_worker(ns, "rc", uid, "gpu"))
    first = await _placed(kube, ns, selector, lambda p: p["metadata"]["name"], 2)
    homes = {p["spec"]["nodeName"] for p in first.values()}
    await _remembered(kube, ns, "RayCluster", homes)
    for pod in first.values():  # scaled in, by the autoscaler or by hand
        await o.delete_pod(kube, ns, pod["metadata"]["name"])
    for _ in range(2):  # and out again
        await _create(kube, ns, fp.ray_worker(ns, "rc", uid, "gpu"))
    again = await _placed(kube, ns, selector, lambda p: p["metadata"]["name"], 2)
    assert {p["spec"]["nodeName"] for p in again.values()} == homes
