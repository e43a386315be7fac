"""MindCluster's per-node ConfigMaps (optional sources, behaviour.md "Topology" and 5.3).

- `kube-system/mindx-dl-deviceinfo-<node>`, key `DeviceInfoCfg`: JSON with `SuperPodID`
  and `RackID` (negative: none). homing copies them onto the node's topology labels.
- `mindx-dl/mindx-dl-nodeinfo-<node>`, key `NodeInfo`: JSON with NodeD's `NodeStatus`
  (`Healthy`, `PreSeparate`, `SubHealthy`, `UnHealthy`)."""
from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from homing.engine.model import Health

DEVICE_INFO_NAMESPACE, DEVICE_INFO_PREFIX, DEVICE_INFO_KEY = "kube-system", "mindx-dl-deviceinfo-", "DeviceInfoCfg"
NODE_INFO_NAMESPACE, NODE_INFO_PREFIX, NODE_INFO_KEY = "mindx-dl", "mindx-dl-nodeinfo-", "NodeInfo"
NODED_HEALTH = MappingProxyType({"Healthy": Health.HEALTHY, "PreSeparate": Health.SUB_HEALTHY, "SubHealthy": Health.SUB_HEALTHY,
                                 "UnHealthy": Health.UNHEALTHY})


def node_of(configmap: dict[str, Any], prefix: str) -> str | None:
    name = (configmap.get("metadata") or {}).get("name") or ""
    return name[len(prefix):] or None if name.startswith(prefix) else None


def _payload(configmap: dict[str, Any], key: str) -> dict[str, Any]:
    text = (configmap.get("data") or {}).get(key)
    if text is None:
        raise ValueError(f"no {key} in the ConfigMap")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{key} is not JSON: {err.msg}") from err
    if not isinstance(data, dict):
        raise ValueError(f"{key} is not a JSON object")
    return data


def _id(value: object) -> str | None:
    """IDs are integers (sometimes written as strings); negative means none."""
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return str(number) if number >= 0 else None


def device_info_ids(configmap: dict[str, Any]) -> tuple[str | None, str | None]:
    """(super-pod id, rack id) from a device-info ConfigMap. Raises ValueError on bad input."""
    data = _payload(configmap, DEVICE_INFO_KEY)
    return _id(data.get("SuperPodID")), _id(data.get("RackID"))


def noded_health(configmap: dict[str, Any]) -> Health | None:
    """NodeD's verdict; None for a status homing does not know. Raises ValueError on bad input."""
    data = _payload(configmap, NODE_INFO_KEY)
    status = data.get("NodeStatus")
    if status is None and isinstance(data.get("NodeInfo"), dict):
        status = data["NodeInfo"].get("NodeStatus")
    return NODED_HEALTH.get(str(status)) if status is not None else None
