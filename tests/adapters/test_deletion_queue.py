"""The pod adapter keeps each pending accelerator pod's place in its scheduler's queue for
the scale-in marks (engine/replicas/deletion_cost.py): a Volcano Job's pods by their PodGroup's
creation, as Volcano orders equal-priority jobs; the place goes when the pod binds or goes."""
from __future__ import annotations

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.replicas.deletion_cost import Queued
from homing.kube.state.cluster import ClusterState
from homing.kube.state.pods import PodObserver


def podgroup(name: str, created: str) -> dict:
    return {"metadata": {"namespace": "ai", "name": name, "uid": f"pg-{name}", "creationTimestamp": created},
            "spec": {"minMember": 1}}


def pod(name: str, group: str, created: str, node: str | None = None) -> dict:
    return {
        "metadata": {"namespace": "ai", "name": name, "uid": f"uid-{name}", "creationTimestamp": created,
                     "annotations": {"scheduling.k8s.io/group-name": group, "volcano.sh/task-index": "0"}},
        "spec": {"priority": 100, **({"nodeName": node} if node else {}),
                 "containers": [{"name": "c", "resources": {"limits": {"huawei.com/Ascend910": "8"}}}]},
        "status": {"phase": "Pending"},
    }


def test_pending_pods_queue_by_their_pod_groups_creation_and_leave_when_bound():
    cluster = ClusterState(Settings())
    cluster.observe_namespace("ADDED", {"metadata": {"name": "ai", "uid": "ns", "labels": {"homing.io/enabled": "true"}}})
    pods = PodObserver(Settings(), MemoryIndex(), cluster)
    cluster.observe_podgroup("ADDED", podgroup("old-job", "2026-12-01T06:00:00Z"))
    cluster.observe_podgroup("ADDED", podgroup("new-job", "2026-12-01T07:00:00Z"))
    # the old job's pods were re-created later (a restart), the new job's earlier
    pods.observe("ADDED", pod("old-0", "old-job", "2026-12-01T09:00:00Z"))
    pods.observe("ADDED", pod("new-0", "new-job", "2026-12-01T08:00:00Z"))
    order = pods.queue_order()
    assert len(order) == 2 and pods.queued["uid-old-0"].since > pods.queued["uid-new-0"].since
    assert pods.queued["uid-old-0"] == Queued(order[0], 100, pods.queued["uid-old-0"].since, ("ai", "old-job"))
    pods.observe("MODIFIED", pod("old-0", "old-job", "2026-12-01T09:00:00Z", node="n1"))
    assert set(pods.queued) == {"uid-new-0"}
    pods.observe("DELETED", pod("new-0", "new-job", "2026-12-01T08:00:00Z"))
    assert pods.queued == {}


def test_a_restarted_job_queues_by_its_recreated_pod_group_even_when_its_pods_are_seen_first():
    """Volcano's job controller deletes a restarted job's PodGroup and creates it again, so
    the job queues by its restart. homing's watches may show the new pods before the new
    group: a pod's place is read from its group as the group is when the order is asked for."""
    cluster = ClusterState(Settings())
    cluster.observe_namespace("ADDED", {"metadata": {"name": "ai", "uid": "ns", "labels": {"homing.io/enabled": "true"}}})
    pods = PodObserver(Settings(), MemoryIndex(), cluster)
    for name in ("a-job", "b-job"):  # created together at dawn: their names would decide
        cluster.observe_podgroup("ADDED", podgroup(name, "2026-12-01T06:00:00Z"))
    # b restarts first, then a; each job's new pods are seen before its new group
    pods.observe("ADDED", pod("b-0", "b-job", "2026-12-01T08:00:00Z"))
    pods.observe("ADDED", pod("a-0", "a-job", "2026-12-01T08:00:01Z"))
    for name, created in (("b-job", "2026-12-01T08:00:00Z"), ("a-job", "2026-12-01T08:00:01Z")):
        cluster.observe_podgroup("DELETED", podgroup(name, "2026-12-01T06:00:00Z"))
        cluster.observe_podgroup("ADDED", podgroup(name, created))
    b, a = pods.queued["uid-b-0"].owner_key, pods.queued["uid-a-0"].owner_key
    assert pods.queue_order() == [b, a]
