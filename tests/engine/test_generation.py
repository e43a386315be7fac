"""A pod's restart generation, read from what its controller writes (engine/identity/generation.py)."""
from __future__ import annotations

import pytest

from homing.engine.identity.generation import pod_generation


def pod(annotations: dict | None = None, labels: dict | None = None) -> dict:
    return {"metadata": {"annotations": annotations or {}, "labels": labels or {}}}


@pytest.mark.parametrize(
    "given, value, warned",
    [
        pytest.param(pod({"volcano.sh/job-version": "3"}), 3, False, id="volcano-job-version"),
        pytest.param(pod(labels={"jobset.sigs.k8s.io/restart-attempt": "0"}), 0, False, id="jobset-restart-attempt"),
        pytest.param(pod({"volcano.sh/job-version": "2"}, {"jobset.sigs.k8s.io/restart-attempt": "7"}), 2, False,
                     id="volcano-first"),
        pytest.param(pod(), None, False, id="none-written"),
        pytest.param({"metadata": None}, None, False, id="no-metadata"),
        pytest.param(pod({"volcano.sh/job-version": "-1"}), None, True, id="negative"),
        pytest.param(pod({"volcano.sh/job-version": " 3"}), None, True, id="padded"),
        pytest.param(pod({"volcano.sh/job-version": "²"}), None, True, id="not-ascii-digit"),
        pytest.param(pod({"volcano.sh/job-version": "2147483648"}), None, True, id="beyond-int32"),
        pytest.param(pod({"volcano.sh/job-version": 3}), None, True, id="not-a-string"),
    ],
)
def test_pod_generation(given, value, warned):
    got = pod_generation(given)
    assert got.value == value
    assert (got.warning is not None) == warned
