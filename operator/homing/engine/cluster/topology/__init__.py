"""Cluster topology (behaviour.md "Topology"): where each node sits (super-pod, rack, multilevel
groups, HyperNode tiers) and how healthy it is, from node labels, Volcano HyperNodes
and MindCluster's per-node ConfigMaps."""
