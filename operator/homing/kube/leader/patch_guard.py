"""The pod-patch guard's self-check (behaviour.md "Deletion cost"; issue 41): homing may patch
every pod (RBAC cannot narrow a patch to one annotation), and the ValidatingAdmissionPolicy in
manifests/base/pod-deletion-cost-policy.yaml is what holds it to its band. Before the leader
writes a mark it proves the guard is in force with a server-side dry-run patch only the guard
refuses: a cost outside the band on a replica it would mark. Nothing is written by a dry run.

- holds: the API server refused the patch with the guard's message;
- missing: the patch would have gone through (the policy or its binding is absent or broken);
- no-api: the API server has no ValidatingAdmissionPolicy (before Kubernetes 1.30): nothing can
  hold homing's patches, so the marks are off;
- unknown: the probe could not tell (the pod went, a timeout): asked again at the next pass."""
from __future__ import annotations

import enum

from homing.kube.client import MERGE_PATCH, Kube, KubeError

POLICY_API = "/apis/admissionregistration.k8s.io/v1"
OUTSIDE_THE_BAND = "0"  # a cost homing never writes: only the guard refuses it
REFUSAL = "homing may"  # every message of the guard's validations begins so


class Verdict(enum.Enum):
    HOLDS = "holds"
    MISSING = "missing"
    NO_API = "no-api"
    UNKNOWN = "unknown"


async def policies_served(kube: Kube) -> bool | None:
    """Whether the API server serves ValidatingAdmissionPolicies; None when it could not be asked."""
    try:
        found = await kube.request("GET", POLICY_API, timeout=5)
    except KubeError as err:
        return False if err.status == 404 else None
    except (OSError, TimeoutError):
        return None
    return any(r.get("name") == "validatingadmissionpolicies" for r in found.get("resources") or ())


async def check(kube: Kube, namespace: str, pod: str) -> Verdict:
    served = await policies_served(kube)
    if served is None:
        return Verdict.UNKNOWN
    if not served:
        return Verdict.NO_API
    body = {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": OUTSIDE_THE_BAND}}}
    try:
        await kube.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod}", body=body, query=[("dryRun", "All")],
                           content_type=MERGE_PATCH, timeout=5)
    except KubeError as err:
        return Verdict.HOLDS if err.status in (403, 422) and REFUSAL in err.body else Verdict.UNKNOWN
    except (OSError, TimeoutError):
        return Verdict.UNKNOWN
    return Verdict.MISSING
