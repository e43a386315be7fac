"""What the engine knows of the cluster besides pods: node health, images on nodes, label
selectors, and where each node sits (topology/)."""
