"""The marks stay off where nothing can hold homing's pod patches (issue 41, the pod-patch
guard): an API server before Kubernetes 1.30 serves no ValidatingAdmissionPolicy. No such API
server is built here, so a stand-in answers discovery as one does; the verdicts on a real API
server (holds, missing, unknown) are in tests/integration/test_deletion_cost.py."""
from __future__ import annotations

from homing.config import Settings
from homing.engine.replicas.deletion_cost import MARK, Mark
from homing.kube.client import KubeError
from homing.kube.leader.deletion_marks import DeletionMarks
from homing.kube.leader.patch_guard import Verdict
from homing.kube.signals import metrics

PROBE = Mark(uid="u1", namespace="ns", name="infer-1", node="n0", value=MARK, claimant="ns/train")


class OlderApiServer:
    """Discovery as Kubernetes 1.29 answers it by default: the group serves webhooks, no policies."""

    def __init__(self, group_served: bool = True) -> None:
        self.group_served = group_served
        self.patches: list[str] = []

    async def request(self, method: str, path: str, **_: object) -> dict:
        if method == "GET" and path == "/apis/admissionregistration.k8s.io/v1":
            if not self.group_served:
                raise KubeError(404, "not found")
            return {"resources": [{"name": "mutatingwebhookconfigurations"}, {"name": "validatingwebhookconfigurations"}]}
        self.patches.append(path)
        return {}


async def test_no_policy_api_turns_the_marks_off_and_says_why():
    for api in (OlderApiServer(), OlderApiServer(group_served=False)):
        marks = DeletionMarks(api, None, Settings(), lambda: True)  # type: ignore[arg-type]
        assert await marks.guarded(PROBE, 0.0) is False
        assert marks.guard is Verdict.NO_API and api.patches == [], "no probe patch, no mark"
        assert metrics.PATCH_GUARD.labels("no-api")._value.get() == 1
        assert metrics.PATCH_GUARD.labels("holds")._value.get() == 0


async def test_a_verdict_is_kept_for_the_check_interval_an_unknown_one_is_not():
    api = OlderApiServer()
    settings = Settings()
    marks = DeletionMarks(api, None, settings, lambda: True)  # type: ignore[arg-type]
    marks.guard, marks.guard_at = Verdict.HOLDS, 0.0
    assert await marks.guarded(PROBE, settings.deletion_cost.guard_check_seconds - 1) is True
    assert marks.guard is Verdict.HOLDS, "not asked again inside the interval"
    assert await marks.guarded(PROBE, settings.deletion_cost.guard_check_seconds + 1) is False
    assert marks.guard is Verdict.NO_API, "asked again after it"
    marks.guard = Verdict.UNKNOWN
    await marks.guarded(PROBE, settings.deletion_cost.guard_check_seconds + 2)
    assert marks.guard is Verdict.NO_API, "an unknown verdict is asked again at the next pass"


async def test_observe_only_writes_no_mark():
    """Observe-only (issue 42) adds no term and writes nothing to pods: not even the guard's probe."""
    from types import SimpleNamespace

    api = OlderApiServer()
    pods = SimpleNamespace(replicas={}, claims_known=True)
    marks = DeletionMarks(api, SimpleNamespace(pods=pods), Settings(mode="observe"), lambda: True)  # type: ignore[arg-type]
    assert await marks.once(0.0) == 0 and api.patches == [] and marks.guard is None
