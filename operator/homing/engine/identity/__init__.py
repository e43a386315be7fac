"""Who a pod is: its workload (owner) and its place in it (rank). behaviour.md "Identity"."""
from homing.engine.identity.owner import WorkloadIndex, resolve_owner
from homing.engine.identity.rank import RankResult, resolve_rank

__all__ = ["RankResult", "WorkloadIndex", "resolve_owner", "resolve_rank"]
