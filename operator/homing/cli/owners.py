"""`homing owners [-n NS | -A]`: the owners homing remembers, from the PlacementMemory objects
(LIST only), decoded by the operator's own reader."""
from __future__ import annotations

from urllib.parse import quote

import aiohttp

from homing.cli.errors import NOT_FOUND, CliError, from_api
from homing.explain import OwnerList, list_owners
from homing.kube.client import Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION


async def listed(kube: Kube, namespace: str | None) -> OwnerList:
    """namespace None: every namespace."""
    path = f"/apis/{GROUP}/{VERSION}" + (f"/namespaces/{quote(namespace)}" if namespace else "") + f"/{PLURAL}"
    what = "PlacementMemory objects " + (f"in namespace {namespace}" if namespace else "in any namespace")
    try:
        items = await kube.list_all(path)
    except KubeError as err:
        if err.status == 404:
            raise CliError(f"the PlacementMemory CRD ({PLURAL}.{GROUP}) is not installed", NOT_FOUND) from err
        raise from_api(err, what) from err
    except (aiohttp.ClientError, OSError, TimeoutError) as err:
        raise CliError(f"cannot reach the API server: {' '.join(str(err).split())[:300]}") from err
    return list_owners(items)
