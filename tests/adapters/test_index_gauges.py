"""Every bounded map of the index has a metric (issue 41, bounded maps): an operator sees which
one grows before it reaches its bound."""
from __future__ import annotations

from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.memory.loads import Burst, Load
from homing.engine.model import OwnerRef
from homing.kube.signals import metrics
from homing.kube.store.upkeep import index_gauges

JOB = OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="j", namespace="ns", uid="g-job")
POOL = OwnerRef(api_version="apps/v1", kind="Deployment", name="d", namespace="ns", uid="g-pool")


def test_each_map_is_measured():
    index = MemoryIndex()
    index.record_bind(JOB, "0", "n0", (), 1.0)
    index.record_bind(JOB, "1", "n1", (), 1.0)
    index.record_bind(POOL, None, "n2", (), 1.0)
    index.pod_seen("p1", LivePod(JOB.key, "1", "n1"))
    index.vacate("n0", JOB.key, 2.0)
    index.ran_images(("img",), "n1", 2.0, "ns")
    index.keep_burst(Burst(last=2.0, count=1, band=("ns", 100)))
    index.promised.make(POOL.key, "n2", 2.0, 60)
    index.waiting.wait("p2", Load(POOL.key, 100, 1))
    sizes = index_gauges(index)
    assert sizes == {"owners": 2, "ranks": 2, "pool": 1, "live-pods": 1, "vacant-homes": 1, "image-runs": 1,
                     "bursts": 1, "promises": 1, "waiting": 1}
    assert all(metrics.INDEX_ENTRIES.labels(name)._value.get() == size for name, size in sizes.items())
