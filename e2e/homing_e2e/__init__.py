"""Test harness: a real local control plane, the operator as a process, and a fake
kubelet. The same suite runs against any cluster given HOMING_E2E_KUBECONFIG."""
