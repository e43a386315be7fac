"""The owner -> rank -> node memory and its lifecycle rules (behaviour.md "Memory")."""
from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.memory.index import LivePod, MemoryIndex

__all__ = ["FaultMark", "LivePod", "MemoryIndex", "OwnerMemory", "PoolEntry", "RankEntry", "Stats"]
