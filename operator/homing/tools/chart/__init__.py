"""The Helm chart (charts/homing), generated from the objects `kubectl kustomize manifests/`
builds, so that chart and manifests cannot drift: see homing.tools.genchart and docs/helm.md."""
