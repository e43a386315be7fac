"""The pure engine: identity, memory rules, strategies and the admission patch.
Nothing in here talks to Kubernetes; the operator package adapts it."""
