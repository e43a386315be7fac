"""Pods exactly as each framework's controller writes them: names, labels, annotations and
ownerReferences, read from the controllers' own source in the Go module cache:
  LeaderWorkerSet  sigs.k8s.io/lws v0.8.0 pkg/controllers/leaderworkerset_controller.go
                   (leader StatefulSet), pod_controller.go (worker StatefulSet, owned by the
                   leader pod), pkg/webhooks/pod_webhook.go (group and worker index labels)
  JobSet           sigs.k8s.io/jobset v0.11.0 pkg/controllers/jobset_controller.go
                   labelAndAnnotateObject (Job and pod template), placement.GenJobName
  TrainJob         github.com/kubeflow/trainer/v2 v2.1.0 pkg/runtime/framework/plugins/jobset
                   (a JobSet named like the TrainJob, controlled by it)
  PyTorchJob       github.com/kubeflow/training-operator v1.9.2 pkg/controller.v1/common/pod.go
                   createNewPod, GenLabels, GenOwnerReference
  KubeRay          github.com/ray-project/kuberay/ray-operator v1.5.0 controllers/ray/common/pod.go
                   labelPod, and the RayCluster as the pods' controller
plus what Kubernetes' own StatefulSet and Job controllers add to every pod they make."""
from __future__ import annotations

import hashlib
import uuid


def _uid() -> str:
    return str(uuid.uuid4())


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True, "blockOwnerDeletion": True}


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _pod(name: str, namespace: str, labels: dict, annotations: dict, owner: dict, uid: str | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "uid": uid or _uid(),
            "labels": labels, "annotations": annotations, "ownerReferences": [owner],
        },
        "spec": {"containers": [{"name": "c", "image": "img"}]},
    }


def _statefulset_labels(sts: str, pod_name: str, ordinal: int) -> dict:
    """What the StatefulSet controller adds to each of its pods."""
    return {
        "controller-revision-hash": f"{sts}-5d4c8b7f9",
        "statefulset.kubernetes.io/pod-name": pod_name,
        "apps.kubernetes.io/pod-index": str(ordinal),
    }


# -- LeaderWorkerSet -------------------------------------------------------------------------
def lws_leader(namespace: str, lws: str, group: int, leader_sts_uid: str, size: int = 2, webhooked: bool = True) -> dict:
    """Group `group`'s leader: pod `<lws>-<group>` of the leader StatefulSet `<lws>` (controlled
    by the LeaderWorkerSet). `webhooked=False`: as it reaches a webhook that runs before LWS's."""
    name = f"{lws}-{group}"
    labels = {
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
        "leaderworkerset.sigs.k8s.io/name": lws,
        "leaderworkerset.sigs.k8s.io/template-revision-hash": "7c5f9d8b6",
        **_statefulset_labels(lws, name, group),
    }
    if webhooked:
        labels["leaderworkerset.sigs.k8s.io/group-index"] = str(group)
        labels["leaderworkerset.sigs.k8s.io/group-key"] = _sha1(f"{namespace}/{name}")
    annotations = {"leaderworkerset.sigs.k8s.io/size": str(size)}
    return _pod(name, namespace, labels, annotations, _owner("apps/v1", "StatefulSet", lws, leader_sts_uid))


def lws_worker(
    namespace: str, lws: str, group: int, worker: int, worker_sts_uid: str, size: int = 2, webhooked: bool = True
) -> dict:
    """Worker `worker` of group `group`: pod `<lws>-<group>-<worker>` of the worker StatefulSet
    `<lws>-<group>`, which the leader pod controls (a group restart makes a new one)."""
    leader = f"{lws}-{group}"
    name = f"{leader}-{worker}"
    labels = {
        "leaderworkerset.sigs.k8s.io/group-index": str(group),
        "leaderworkerset.sigs.k8s.io/name": lws,
        "leaderworkerset.sigs.k8s.io/group-key": _sha1(f"{namespace}/{leader}"),
        "leaderworkerset.sigs.k8s.io/template-revision-hash": "7c5f9d8b6",
        **_statefulset_labels(leader, name, worker),
    }
    if webhooked:
        labels["leaderworkerset.sigs.k8s.io/worker-index"] = str(worker)
    annotations = {"leaderworkerset.sigs.k8s.io/size": str(size), "leaderworkerset.sigs.k8s.io/leader-name": leader}
    return _pod(name, namespace, labels, annotations, _owner("apps/v1", "StatefulSet", leader, worker_sts_uid))


# -- JobSet (and TrainJob) -------------------------------------------------------------------
def jobset_pod(
    namespace: str, jobset: str, jobset_uid: str, replicated_job: str, job_index: int, completion_index: int,
    job_uid: str, replicas: int = 2, restarts: int = 0,
) -> dict:
    """One pod of Job `<jobset>-<replicatedjob>-<jobindex>` (an Indexed Job the JobSet made)."""
    job = f"{jobset}-{replicated_job}-{job_index}"
    jobset_meta = {
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/jobset-uid": jobset_uid,
        "jobset.sigs.k8s.io/replicatedjob-name": replicated_job,
        "jobset.sigs.k8s.io/restart-attempt": str(restarts),
        "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
        "jobset.sigs.k8s.io/global-replicas": str(replicas),
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "jobset.sigs.k8s.io/job-key": _sha1(f"{namespace}/{job}"),
        "jobset.sigs.k8s.io/job-global-index": str(job_index),
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/group-replicas": str(replicas),
        "jobset.sigs.k8s.io/job-group-index": str(job_index),
    }
    job_labels = {  # the Job controller's, on every pod it creates
        "batch.kubernetes.io/controller-uid": job_uid,
        "batch.kubernetes.io/job-name": job,
        "controller-uid": job_uid,
        "job-name": job,
        "batch.kubernetes.io/job-completion-index": str(completion_index),
    }
    annotations = {**jobset_meta, "batch.kubernetes.io/job-completion-index": str(completion_index)}
    name = f"{job}-{completion_index}-{uuid.uuid4().hex[:5]}"
    return _pod(name, namespace, {**jobset_meta, **job_labels}, annotations, _owner("batch/v1", "Job", job, job_uid))


def trainjob_pod(namespace: str, trainjob: str, jobset_uid: str, job_index: int, completion_index: int, job_uid: str) -> dict:
    """Trainer v2 runs a TrainJob as a JobSet of the same name; its trainer nodes are the
    replicated job "node", labelled as the trainer's ancestor step."""
    pod = jobset_pod(namespace, trainjob, jobset_uid, "node", job_index, completion_index, job_uid)
    pod["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] = "trainer"
    return pod


# -- Kubeflow training operator ----------------------------------------------------------------
def pytorchjob_pod(namespace: str, job: str, job_uid: str, replica_type: str, index: int) -> dict:
    """`<job>-<type>-<index>`, created by the PyTorchJob controller itself (no Job between)."""
    rtype = replica_type.lower()
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }
    if rtype == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    return _pod(f"{job}-{rtype}-{index}", namespace, labels, {}, _owner("kubeflow.org/v1", "PyTorchJob", job, job_uid))


def mpijob_launcher(namespace: str, job: str, job_uid: str) -> dict:
    """`<job>-launcher` (pkg/controller.v1/mpi/mpijob_controller.go newLauncher): a type, no index."""
    labels = {
        "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "master",
    }
    return _pod(f"{job}-launcher", namespace, labels, {}, _owner("kubeflow.org/v1", "MPIJob", job, job_uid))


# -- KubeRay ------------------------------------------------------------------------------------
def ray_worker(namespace: str, cluster: str, cluster_uid: str, group: str) -> dict:
    """A worker of group `group` (generateName `<cluster>-<group>-worker-`), controlled by the
    RayCluster; nothing in it says which worker it is."""
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": cluster,
        "ray.io/node-type": "worker",
        "ray.io/group": group,
        "ray.io/identifier": f"{cluster}-worker",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    name = f"{cluster}-{group}-worker-{uuid.uuid4().hex[:5]}"
    return _pod(name, namespace, labels, {"ray.io/ft-enabled": "false"}, _owner("ray.io/v1", "RayCluster", cluster, cluster_uid))
