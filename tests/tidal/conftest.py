import pytest

from homing_e2e.cluster import build_binaries


@pytest.fixture(scope="session")
def binaries():
    """The control plane, Volcano's and kube-scheduler 1.37's programs, built once."""
    build_binaries()
