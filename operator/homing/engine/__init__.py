"""The pure engine, one folder per stage a pod goes through: identity/ (who the pod is: owner,
rank, scope), memory/ (where each rank ran, the rules that keep it), cluster/ (node health,
images, topology), placement/ (the terms: job kinds, strategies, rules, weights, the patch),
replicas/ (what several homing replicas agree on). model.py holds the plain data they share.
Nothing in here talks to Kubernetes; homing/kube/ adapts it."""
