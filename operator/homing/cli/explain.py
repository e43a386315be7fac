"""`homing explain pod NAME` / `homing explain owner KIND/NAME`: read the objects (GET and
LIST only) and hand them to the pure explain functions. The operator's settings (its scope,
its fault memory) are asked for only when an explanation needs them (settings.py reads the
cluster's)."""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import aiohttp

from homing.cli.errors import NOT_FOUND, NOT_IN_SCOPE, CliError, from_api
from homing.config import Scope, Settings
from homing.explain import NotInScope, explain_owner, explain_pod
from homing.explain.owner import NoMemory, OwnerExplanation
from homing.explain.pod import PodExplanation
from homing.kube.client import Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION

SettingsSource = Callable[[], Awaitable[Settings]]


async def _optional(kube: Kube, path: str, query: list[tuple[str, str]] | None = None) -> dict[str, Any] | None:
    """Context worth having but not needed (Events, the namespace's labels): None when the
    user may not read it or it is gone."""
    try:
        return await kube.request("GET", path, query=query)
    except KubeError as err:
        if err.status in (401, 403, 404):
            return None
        raise


async def pod(kube: Kube, namespace: str, name: str, settings: SettingsSource) -> PodExplanation:
    what = f"pod {namespace}/{name}"
    try:
        obj = await kube.request("GET", f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}")
    except KubeError as err:
        raise from_api(err, what) from err
    uid = (obj.get("metadata") or {}).get("uid") or ""
    events = await _optional(kube, f"/api/v1/namespaces/{quote(namespace)}/events",
                             [("fieldSelector", f"involvedObject.uid={uid}")])
    ns_obj, scope = None, Scope()  # a decided pod is explained without either
    if "homing.io/decision" not in ((obj.get("metadata") or {}).get("annotations") or {}):
        # only the scope check needs them
        ns_obj = await _optional(kube, f"/api/v1/namespaces/{quote(namespace)}")
        scope = (await settings()).scope
    try:
        return explain_pod(obj, (events or {}).get("items") or [], ns_obj, scope)
    except NotInScope as err:
        raise CliError(str(err), NOT_IN_SCOPE) from err


async def owner(kube: Kube, namespace: str, kind: str, name: str, settings: SettingsSource) -> OwnerExplanation:
    what = f"PlacementMemory objects in namespace {namespace}"
    try:
        items = await kube.list_all(f"/apis/{GROUP}/{VERSION}/namespaces/{quote(namespace)}/{PLURAL}")
    except KubeError as err:
        if err.status == 404:
            raise CliError(f"the PlacementMemory CRD ({PLURAL}.{GROUP}) is not installed", NOT_FOUND) from err
        raise from_api(err, what) from err
    fault_memory = (await settings()).lifetimes.fault_memory_seconds
    try:
        return explain_owner(items, kind, name, time.time(), fault_memory)
    except NoMemory as err:
        raise CliError(f"{err} in namespace {namespace}", NOT_FOUND) from err


async def run(kube: Kube, target: tuple[str, str, str], settings: SettingsSource) -> PodExplanation | OwnerExplanation:
    """target: ("pod", namespace, name) or ("owner", namespace, "kind/name"); `settings` gives
    the operator's settings when first awaited."""
    what, namespace, name = target
    try:
        if what == "pod":
            return await pod(kube, namespace, name, settings)
        kind, _, owner_name = name.partition("/")
        return await owner(kube, namespace, kind, owner_name, settings)
    except (aiohttp.ClientError, OSError, TimeoutError) as err:
        raise CliError(f"cannot reach the API server: {' '.join(str(err).split())[:300]}") from err

