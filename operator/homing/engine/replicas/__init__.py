"""What several homing replicas agree on: the leader Lease, which replica may promise which
pool node, and which workload's replicas go first at scale-in (deletion cost)."""
