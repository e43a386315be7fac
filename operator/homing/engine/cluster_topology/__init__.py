"""Cluster topology (SPEC 5): where each node sits (super-pod, rack, multilevel
groups, HyperNode tiers) and how healthy it is, from node labels, Volcano HyperNodes
and MindCluster's per-node ConfigMaps."""
