"""Wait until the API server really calls homing's webhook: it does so only once its
informer saw the configuration, which the elected leader writes."""
from __future__ import annotations

from homing.kube.client import Kube, KubeError
from homing_e2e import objects as o

INSTALL_NAMESPACE = "homing-system"


async def webhook_answers(kube: Kube, ns: str) -> None:
    """Dry-run a pod in `ns` until it comes back with homing's decision. The leader is
    elected by Leases in the install namespace, which an install has: make sure it is
    there when a test runs before test_install.py creates it."""
    try:
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": INSTALL_NAMESPACE}})
    except KubeError as err:
        if err.status != 409:
            raise
    body = {"metadata": {"name": "probe", "ownerReferences": [await o.owner_stand_in(kube, ns, "probe")]},
            "spec": {"containers": [o.container()]}}

    async def decided() -> bool:
        got = await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body, query=[("dryRun", "All")])
        return "homing.io/decision" in (got["metadata"].get("annotations") or {})

    await o.eventually(decided, timeout=90, what="the webhook called by the API server")
