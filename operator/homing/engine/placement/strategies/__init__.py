"""One module per job kind; each maps (rank, memory, snapshot) to weighted terms.
`node` serves ordinary and vNPU pods, `pool` rankless replicas."""
from homing.engine.placement.strategies.base import Placement, RankContext
from homing.engine.placement.strategies.node import node_strategy
from homing.engine.placement.strategies.pool import pool_strategy

__all__ = ["Placement", "RankContext", "node_strategy", "pool_strategy"]
