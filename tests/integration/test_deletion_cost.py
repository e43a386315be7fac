"""Scale-in frees the homes others wait for, on the real API server and controller manager:
the operator marks a Deployment replica bound to another workload's claimed home with the
pod-deletion-cost annotation and removes the mark when the home stops being claimed; the
ReplicaSet controller deletes the marked replicas first; the ValidatingAdmissionPolicy
holds homing's ServiceAccount to that one annotation on pods."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from homing.engine.replicas.deletion_cost import ANNOTATION, MARK, is_mark
from homing.kube.client import MERGE_PATCH, Kube
from homing.kube.leader import patch_guard
from homing.kube.leader.patch_guard import Verdict
from homing_e2e import objects as o
from homing_e2e.kubectl import kubectl

pytestmark = pytest.mark.cluster

BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"


def deployment(name: str, replicas: int, scheduler: str = "default-scheduler") -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"schedulerName": scheduler, "containers": [o.container(npus=8)], "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0}}},
    }


async def replicas_of(kube: Kube, ns: str, app: str) -> list[dict]:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
    return [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]


async def scale(kube: Kube, ns: str, name: str, replicas: int) -> None:
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}", body={"spec": {"replicas": replicas}},
                       content_type=MERGE_PATCH)


def cost(pod: dict) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(ANNOTATION)


async def test_the_replicaset_deletes_the_marked_replicas_first(kube: Kube, ns: str):
    """No operator here: two of four pending replicas carry homing's mark; scaled to two,
    the ReplicaSet controller deletes exactly those (pending pods rank equal before the cost)."""
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("rs", 4, "nobody"))
    pods = await o.eventually(lambda: _exactly(kube, ns, "rs", 4), what="4 replicas")
    marked = sorted(p["metadata"]["name"] for p in pods)[1:3]
    for name in marked:
        await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}", content_type=MERGE_PATCH,
                           body={"metadata": {"annotations": {ANNOTATION: MARK}}})
    await scale(kube, ns, "rs", 2)
    left = await o.eventually(lambda: _exactly(kube, ns, "rs", 2), what="2 replicas left")
    assert not {p["metadata"]["name"] for p in left} & set(marked)


async def _exactly(kube: Kube, ns: str, app: str, n: int) -> list[dict] | None:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
    pods = got["items"]
    return pods if len(pods) == n and not any(p["metadata"].get("deletionTimestamp") for p in pods) else None


async def test_a_replica_on_a_claimed_home_is_marked_and_unmarked(kube: Kube, operator, ns: str):
    """A job's rank ran on node A and was evicted; a sibling still waits (the job is active), so
    A is claimed. A Deployment replica bound to A is marked; one on a free node B is not; when
    the job has no pod left waiting (and the restart hold, 5 s here, is over), A is no longer
    claimed and the mark goes."""
    a, b = await o.node(kube, f"a-{ns}"), await o.node(kube, f"b-{ns}")
    job = await o.owner_stand_in(kube, ns, "train")
    await o.pod(kube, ns, "train-0", owner=job, annotations={"volcano.sh/task-index": "0"}, npus=8)
    await o.bind(kube, ns, "train-0", a)
    await o.running(kube, ns, "train-0")
    await o.pod(kube, ns, "train-1", owner=job, annotations={"volcano.sh/task-index": "1"}, npus=8)  # pending
    await o.delete_pod(kube, ns, "train-0")  # evicted: A is its vacant home, the job still waits
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("infer", 2, "nobody"))
    pods = await o.eventually(lambda: _exactly(kube, ns, "infer", 2), what="2 replicas")
    on_a, on_b = sorted(p["metadata"]["name"] for p in pods)
    await o.bind(kube, ns, on_a, a)
    await o.bind(kube, ns, on_b, b)

    async def marked() -> bool:
        return is_mark(cost(await o.get_pod(kube, ns, on_a)))

    await o.eventually(marked, timeout=30, what="the replica on the claimed home marked")
    assert cost(await o.get_pod(kube, ns, on_b)) is None, "a replica on a free node keeps no mark"
    # the operator runs here with the admin's credentials, which the guard does not hold: it says so and marks
    assert "pod-patch guard missing" in operator.log_path.read_text()

    await o.delete_pod(kube, ns, "train-1")  # the job waits for nothing: past the restart hold A is not claimed

    async def unmarked() -> bool:
        return cost(await o.get_pod(kube, ns, on_a)) is None

    await o.eventually(unmarked, timeout=30, what="the mark removed once the home is no longer claimed")


async def test_a_users_own_deletion_cost_is_never_touched(kube: Kube, operator, ns: str):
    """Two claimed homes, a replica on each: the one whose user set a cost keeps it, the
    other (the control) is marked."""
    a, c = await o.node(kube, f"a-{ns}"), await o.node(kube, f"c-{ns}")
    job = await o.owner_stand_in(kube, ns, "train")
    for rank, node in (("0", a), ("1", c)):
        await o.pod(kube, ns, f"train-{rank}", owner=job, annotations={"volcano.sh/task-index": rank}, npus=8)
        await o.bind(kube, ns, f"train-{rank}", node)
        await o.running(kube, ns, f"train-{rank}")
    await o.pod(kube, ns, "train-2", owner=job, annotations={"volcano.sh/task-index": "2"}, npus=8)  # waits
    for rank in ("0", "1"):
        await o.delete_pod(kube, ns, f"train-{rank}")
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("infer", 2, "nobody"))
    pods = await o.eventually(lambda: _exactly(kube, ns, "infer", 2), what="2 replicas")
    users, control = sorted(p["metadata"]["name"] for p in pods)
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{users}", content_type=MERGE_PATCH,
                       body={"metadata": {"annotations": {ANNOTATION: "5"}}})
    await o.bind(kube, ns, users, a)
    await o.bind(kube, ns, control, c)

    async def control_marked() -> bool:
        return is_mark(cost(await o.get_pod(kube, ns, control)))

    await o.eventually(control_marked, timeout=30, what="the control replica marked")
    assert cost(await o.get_pod(kube, ns, users)) == "5"


async def test_the_home_of_the_owner_queued_first_is_freed_first(kube: Kube, operator, ns: str):
    """Two jobs each wait for a home a replica holds; the one whose pending pod came first
    (named to sort last, so that names cannot decide) is the one its scheduler takes first.
    Scaled in by one, the ReplicaSet controller deletes the replica on that job's home."""
    homes = {}
    for job_name in ("zeta", "alpha"):  # zeta's pod is queued first
        node = await o.node(kube, f"{job_name}-{ns}")
        job = await o.owner_stand_in(kube, ns, job_name)
        await o.pod(kube, ns, f"{job_name}-0", owner=job, annotations={"volcano.sh/task-index": "0"}, npus=8)
        await o.bind(kube, ns, f"{job_name}-0", node)
        await o.running(kube, ns, f"{job_name}-0")
        await o.pod(kube, ns, f"{job_name}-1", owner=job, annotations={"volcano.sh/task-index": "1"}, npus=8)  # waits
        await o.delete_pod(kube, ns, f"{job_name}-0")
        homes[job_name] = node
        await asyncio.sleep(1.1)  # creation times are in seconds
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("infer", 2, "nobody"))
    pods = await o.eventually(lambda: _exactly(kube, ns, "infer", 2), what="2 replicas")
    on_zeta, on_alpha = sorted(p["metadata"]["name"] for p in pods)
    await o.bind(kube, ns, on_zeta, homes["zeta"])
    await o.bind(kube, ns, on_alpha, homes["alpha"])

    async def both_marked() -> tuple[int, int] | None:
        costs = [cost(await o.get_pod(kube, ns, name)) for name in (on_zeta, on_alpha)]
        return (int(costs[0]), int(costs[1])) if all(is_mark(c) for c in costs) else None

    async def settled() -> tuple[int, int] | None:
        """Both marks, unchanged over two of the leader's passes: the ReplicaSet controller reads
        pods from its informer, and a pass that re-ordered the marks a moment before the scale-in
        (the two binds seen in separate passes) could still reach it with the old order."""
        first = await o.eventually(both_marked, timeout=30, what="both replicas marked")
        await asyncio.sleep(2.5)
        return first if await both_marked() == first else None

    zeta_cost, alpha_cost = await o.eventually(settled, timeout=60, what="both replicas' marks settled")
    assert zeta_cost < alpha_cost, "the home of the job queued first carries the lower cost"
    await scale(kube, ns, "infer", 1)
    (left,) = await o.eventually(lambda: _exactly(kube, ns, "infer", 1), what="1 replica left")
    assert left["metadata"]["name"] == on_alpha, "the replica on the first-queued job's home went first"


# -- the policy ------------------------------------------------------------------------------


def policy_and_grant() -> list[dict]:
    """The policy, and the base ClusterRole (with its binding) that lets homing patch pods."""
    docs = list(yaml.safe_load_all((BASE / "pod-deletion-cost-policy.yaml").read_text()))
    rbac = [d for d in yaml.safe_load_all((BASE / "rbac.yaml").read_text())
            if d and d["kind"] in ("ClusterRole", "ClusterRoleBinding") and d["metadata"]["name"] == "homing"]
    return docs + rbac


@pytest.fixture
def policy_applied(kubeconfig: Path, tmp_path: Path) -> Iterator[None]:
    files = tmp_path / "policy.yaml"
    files.write_text(yaml.safe_dump_all(policy_and_grant()))
    out = kubectl(kubeconfig, "apply", "-f", str(files))
    assert out.returncode == 0, out.stderr
    yield
    kubectl(kubeconfig, "delete", "-f", str(files), "--ignore-not-found", "--wait=false")


async def patch_as_homing(kube: Kube, ns: str, name: str, body: dict) -> tuple[int, str]:
    return await o.patch_as_homing(kube, f"/api/v1/namespaces/{ns}/pods/{name}", body)


async def test_homing_may_change_the_deletion_cost_of_a_pod_and_nothing_else(kube: Kube, ns: str, policy_applied: None):
    await o.pod(kube, ns, "p", labels={"team": "a"}, annotations={"note": "x"}, npus=0)
    other_label = {"metadata": {"labels": {"team": "b"}}}

    async def in_force() -> bool:  # compiled and bound a moment after it is created
        status, text = await patch_as_homing(kube, ns, "p", other_label)
        if status == 200:  # let through before it was in force: put the label back
            await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/p", body={"metadata": {"labels": {"team": "a"}}},
                               content_type=MERGE_PATCH)
            return False
        return status == 422 and "homing may" in text

    await o.eventually(in_force, timeout=30, what="the pod deletion-cost policy in force")
    status, text = await patch_as_homing(kube, ns, "p", {"metadata": {"annotations": {ANNOTATION: MARK}}})
    assert status == 200, text
    status, text = await patch_as_homing(kube, ns, "p", {"metadata": {"annotations": {ANNOTATION: None}}})
    assert status == 200, text
    for refused in ({"metadata": {"annotations": {"note": "y"}}}, {"metadata": {"annotations": {"homing.io/home": "n"}}},
                    {"metadata": {"annotations": {"note": None}}}, {"metadata": {"finalizers": ["example.com/keep"]}}):
        status, text = await patch_as_homing(kube, ns, "p", refused)
        assert status == 422 and "homing may" in text, (refused, status, text)
    got = await o.get_pod(kube, ns, "p")
    assert got["metadata"]["labels"] == {"team": "a"} and got["metadata"]["annotations"] == {"note": "x"}


async def _in_force(kube: Kube, ns: str, name: str) -> None:
    """The policy is compiled and bound a moment after it is created: probe with a label homing
    may not set, put back whenever it got through."""
    async def refused() -> bool:
        status, text = await patch_as_homing(kube, ns, name, {"metadata": {"labels": {"probe": "x"}}})
        if status == 200:
            await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}", body={"metadata": {"labels": {"probe": None}}},
                               content_type=MERGE_PATCH)
            return False
        return status == 422 and "homing may" in text

    await o.eventually(refused, timeout=30, what="the pod deletion-cost policy in force")


async def test_homing_may_not_set_a_cost_outside_its_band(kube: Kube, ns: str, policy_applied: None):
    """A compromised or buggy replica could rank any team's replicas first at scale-in with
    any cost it liked; the policy holds it to its own band (issue 41, the pod-patch guard).
    A value that is no 32-bit integer the API server's own pod validation refuses first."""
    await o.pod(kube, ns, "p", npus=0)
    await _in_force(kube, ns, "p")
    for cost in ("-2147483001", "-2147482000", "0", "100", "-2147483648"):
        status, text = await patch_as_homing(kube, ns, "p", {"metadata": {"annotations": {ANNOTATION: cost}}})
        assert status == 422 and "only to a value in its band" in text, (cost, status, text)
    for edge in ("-2147483000", "-2147482001"):
        status, text = await patch_as_homing(kube, ns, "p", {"metadata": {"annotations": {ANNOTATION: edge}}})
        assert status == 200, (edge, text)


async def test_homing_may_not_remove_or_change_a_users_cost(kube: Kube, ns: str, policy_applied: None):
    await o.pod(kube, ns, "p", annotations={ANNOTATION: "500"}, npus=0)
    await _in_force(kube, ns, "p")
    for body in ({"metadata": {"annotations": {ANNOTATION: None}}}, {"metadata": {"annotations": {ANNOTATION: MARK}}}):
        status, text = await patch_as_homing(kube, ns, "p", body)
        assert status == 422 and "only where it set it" in text, (body, status, text)
    got = await o.get_pod(kube, ns, "p")
    assert got["metadata"]["annotations"][ANNOTATION] == "500", "a user's cost is the user's"


async def test_homing_may_not_patch_pods_outside_the_namespaces_it_serves(kube: Kube, policy_applied: None):
    other = await o.namespace(kube, f"t-{o.short_id()}", opted_in=False)
    await o.pod(kube, other, "p", npus=0)
    await _in_force(kube, other, "p")
    status, text = await patch_as_homing(kube, other, "p", {"metadata": {"annotations": {ANNOTATION: MARK}}})
    assert status == 422 and "namespaces it serves" in text, (status, text)
    await o.pod(kube, other, "opted", labels={"homing.io/enabled": "true"}, npus=0)
    status, text = await patch_as_homing(kube, other, "opted", {"metadata": {"annotations": {ANNOTATION: MARK}}})
    assert status == 200, "a pod opted in by its own label may be marked"


@pytest.fixture
async def kube_as_homing(kubeconfig: Path) -> AsyncIterator[Kube]:
    """A client that sends every request as homing's ServiceAccount (impersonated)."""
    client = await Kube.connect(str(kubeconfig))
    client.api.set_default_header("Impersonate-User", o.HOMING_SA)
    client.api.set_default_header("Impersonate-Group", "system:serviceaccounts")
    yield client
    await client.close()


async def test_the_guard_self_check_sees_the_policy_in_force(kube: Kube, kube_as_homing: Kube, ns: str, policy_applied: None):
    """The leader's dry-run probe (kube/leader/patch_guard.py) against the real API server: with the
    policy applied, the patch outside the band is refused, and nothing was written."""
    await o.pod(kube, ns, "p", npus=0)
    await _in_force(kube, ns, "p")
    assert await patch_guard.check(kube_as_homing, ns, "p") is Verdict.HOLDS
    assert cost(await o.get_pod(kube, ns, "p")) is None, "a dry run writes nothing"


async def test_the_guard_self_check_sees_no_policy(kube: Kube, kube_as_homing: Kube, policy_applied: None):
    """Where the policy does not reach (a namespace homing does not serve is refused by it too, so
    use the admin's own client, which the policy never matches): the probe reports it missing."""
    other = await o.namespace(kube, f"t-{o.short_id()}")
    await o.pod(kube, other, "p", npus=0)
    assert await patch_guard.check(kube, other, "p") is Verdict.MISSING
    assert cost(await o.get_pod(kube, other, "p")) is None, "a dry run writes nothing"
    assert await patch_guard.check(kube_as_homing, other, "gone") is Verdict.UNKNOWN, "a pod gone tells nothing"
