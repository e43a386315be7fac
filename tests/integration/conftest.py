"""A real kube-apiserver (with etcd and the controller manager), the operator as a
process with its webhook registered, and a fake kubelet on the harness's nodes.
HOMING_E2E_KUBECONFIG points the same tests at another cluster (kind, say); the
operator then runs on this host and HOMING_E2E_WEBHOOK_HOST must be reachable from it."""
from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest

from homing.kube.client import Kube
from homing_e2e import frameworks, objects, volcano
from homing_e2e.cluster import LocalControlPlane, build_binaries
from homing_e2e.fake_kubelet import FakeKubelet
from homing_e2e.operator_process import OperatorProcess, webhook_host

pytestmark = pytest.mark.cluster

# Multilevel jobs read their level labels from this tree (test_topology.py labels nodes so).
RESOURCE_LEVELS = '{"default": {"level1": {"label": "e2e.homing.io/switch"}, "level2": {"label": "e2e.homing.io/spine"}}}'


@pytest.fixture(scope="session")
def kubeconfig() -> Path:
    given = os.environ.get("HOMING_E2E_KUBECONFIG")
    if given:
        yield Path(given)
        return
    build_binaries()
    cp = LocalControlPlane().start()
    try:
        yield cp.kubeconfig
    finally:
        cp.stop()


@pytest.fixture(scope="session")
async def kube(kubeconfig: Path) -> Kube:
    client = await Kube.connect(str(kubeconfig))
    await objects.install_crd(client)
    for name in volcano.TOPOLOGY_CRDS:  # PodGroups and HyperNodes, for topology-aware jobs
        await objects.install_crd(client, volcano.crd(name))
    # LeaderWorkerSet and JobSet: watched from the operator's start (large CRDs: side by side)
    await asyncio.gather(*(framework().install_crds(client) for framework in frameworks.FRAMEWORKS))
    kubelet = FakeKubelet(client)
    kubelet.start()
    yield client
    await kubelet.stop()
    await client.close()


@pytest.fixture(scope="session")
def operator(kubeconfig: Path, kube: Kube) -> OperatorProcess:
    workdir = Path(tempfile.mkdtemp(prefix="homing-op-"))
    proc = OperatorProcess(
        kubeconfig,
        workdir,
        webhook_host=webhook_host(),
        env={
            "HOMING_LIFETIMES__SWEEP_INTERVAL_SECONDS": "5",
            # A job whose last pod a test deletes is held 60 s by default (behaviour.md "Claimed
            # homes", the restart hold); tests that end a job that way wait 5 s instead.
            "HOMING_LIFETIMES__RESTART_HOLD_SECONDS": "5",
            # The leader compares the webhook configuration with what it wants every minute by default.
            "HOMING_WEBHOOK__CONFIGURATION_CHECK_SECONDS": "2",
            # Not "homing": test_install.py dry-runs the shipped configuration of that name.
            "HOMING_WEBHOOK__CONFIGURATION_NAME": "homing-e2e",
            "HOMING_TOPOLOGY__RESOURCE_LEVEL_CONFIG": RESOURCE_LEVELS,
        },
    )
    proc.start()
    yield proc
    proc.stop()
    print(f"operator log: {proc.log_path}")


@pytest.fixture(autouse=True)
def operator_running(request: pytest.FixtureRequest) -> None:
    """Every cluster test starts with a ready operator, whatever the previous one did."""
    if "operator" in request.fixturenames:
        op: OperatorProcess = request.getfixturevalue("operator")
        if op.proc is None or op.proc.poll() is not None:
            op.start()


@pytest.fixture
async def ns(kube: Kube) -> str:
    name = f"t-{objects.short_id()}"
    await objects.namespace(kube, name)
    return name
