"""PlacementMemory, the memory's durable mirror: loaded at start, written by the leader, swept."""
