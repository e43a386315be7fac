"""Watching the cluster: kopf's watches and their periodic re-list, the ConfigMap reflectors, and start-up's first listing."""
