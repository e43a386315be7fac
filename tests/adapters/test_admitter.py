"""The webhook's adapter never raises and never patches on an internal error: an
exception from building the patch would escape into kopf, which turns it into a rejected
pod."""
from __future__ import annotations

import json

import pytest
from tests.engine.helpers import NOW, owner, pod

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import Health, NodeState
from homing.kube.admission.admitter import Admitter
from homing.kube.state.cluster import ClusterState

JOB = owner(kind="Job", name="train")


def admitter() -> Admitter:
    settings = Settings()
    index, cluster = MemoryIndex(), ClusterState(settings)
    cluster.snapshot.put(NodeState("n1", Health.HEALTHY))
    index.record_bind(JOB, "0", "n1", (), NOW - 10)
    return Admitter(settings, index, cluster)


def rank0(affinity=None) -> dict:
    p = pod(name="train-0", controller=JOB, annotations={"volcano.sh/task-index": "0"}, uid="")
    if affinity is not None:
        p["spec"]["affinity"] = affinity
    return p


def test_a_well_formed_pod_is_sent_home():
    decision, ops = admitter().admit(rank0(), dryrun=False, now=NOW)
    assert (decision.outcome, decision.home) == ("home", "n1")
    assert any(op["path"] == "/spec/affinity" for op in ops)


@pytest.mark.parametrize(
    "affinity",
    [
        pytest.param(["not", "a", "mapping"], id="affinity-a-list"),
        pytest.param({"nodeAffinity": "nonsense"}, id="node-affinity-a-string"),
    ],
)
def test_a_patch_that_cannot_be_built_admits_the_pod_unchanged(affinity):
    decision, ops = admitter().admit(rank0(affinity), dryrun=False, now=NOW)
    assert decision.outcome == "error" and ops == []


def test_the_admitted_log_line_names_the_bursts_victim():
    """An operator reading the logs sees which workload a burst agreed to displace (behaviour.md "Beyond the home")."""
    from structlog.testing import capture_logs
    from tests.engine.test_displacement import replica

    from homing.engine.memory.loads import Load

    settings = Settings()
    index, cluster = MemoryIndex(), ClusterState(settings)
    for i, job in enumerate(["a", "a", "b", "b"]):
        cluster.snapshot.put(NodeState(f"n{i}", Health.HEALTHY, npus=8))
        index.occupy(f"p{i}", f"n{i}", Load(f"ns/train-{job}", 100, 8))
    deploy = owner(kind="Deployment", name="infer", uid="dep")
    with capture_logs() as logs:
        decision, _ = Admitter(settings, index, cluster).admit(replica(deploy, 0), dryrun=False, now=NOW)
    [line] = [e for e in logs if e["event"] == "admitted"]
    assert decision.victim in ("ns/train-a", "ns/train-b")
    assert line["displace"] == decision.victim


def test_observe_only_records_the_decision_and_adds_no_term():
    """Observe-only (issue 42): a team adopts homing in shadow. The pod carries what homing
    would have preferred, no affinity term, and the memory learns as usual (the admission is
    counted, so the placement outcomes give the home rate without homing)."""
    enforcing = admitter()
    observing = admitter()
    observing.settings = Settings(mode="observe")
    decision, ops = observing.admit(rank0(), dryrun=False, now=NOW)
    assert (decision.outcome, decision.home) == ("home", "n1"), "the same decision"
    assert not any("affinity" in op["path"] for op in ops), "no term"
    annotations = {op["path"].rsplit("/", 1)[-1].replace("~1", "/"): op["value"] for op in ops} \
        if ops[0]["path"] != "/metadata/annotations" else ops[0]["value"]
    record = json.loads(annotations["homing.io/decision"])
    assert record["observe"] is True and record["home"] == "n1"
    assert annotations["homing.io/home"] == "n1", "the outcome is counted when it binds"
    assert observing.index.owner(JOB.key).stats.admitted == 1
    assert enforcing.admit(rank0(), dryrun=False, now=NOW)[1] != ops
