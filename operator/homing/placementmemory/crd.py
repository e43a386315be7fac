"""The CustomResourceDefinition, generated from the status schema (`make crds`)."""
from __future__ import annotations

from typing import Any

from homing.placementmemory.schema import GROUP, KIND, PLURAL, VERSION, PlacementMemoryStatus


def _structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Pydantic JSON schema -> Kubernetes structural schema: inline $refs, turn
    Optional into nullable, drop titles."""
    if "$ref" in schema:
        return _structural(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        chosen = _structural(options[0], defs)
        if len(options) < len(schema["anyOf"]):
            chosen["nullable"] = True
        if "description" in schema:
            chosen["description"] = schema["description"]
        return chosen
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        if key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        else:
            out[key] = value
    return out


def status_schema() -> dict[str, Any]:
    raw = PlacementMemoryStatus.model_json_schema(by_alias=True)
    return _structural(raw, raw.get("$defs", {}))


def crd() -> dict[str, Any]:
    def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
        col: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
        if priority:
            col["priority"] = priority
        return col

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "plural": PLURAL,
                "singular": "placementmemory",
                "shortNames": ["pmem"],
                "listKind": f"{KIND}List",
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        column("Owner-Kind", ".status.owner.kind"),
                        column("Owner", ".status.owner.name"),
                        column("Ranks", ".status.summary.ranks", "integer"),
                        column("Warm", ".status.summary.warm", "integer"),
                        column("Pool", ".status.summary.pool", "integer", priority=1),
                        column("Shard", ".status.shard.index", "integer", priority=1),
                        column("Hits", ".status.stats.home", "integer"),
                        column("Misses", ".status.stats.elsewhere", "integer"),
                        column("Last-Seen", ".status.lastSeen", "date"),
                        column("Age", ".metadata.creationTimestamp", "date"),
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "Where each rank of one workload ran; written by homing.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "description": "Unused; the memory is status."},
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }
