"""What the operator holds of the cluster besides the memory: nodes, namespaces, PodGroups, the pod watch's adapter."""
