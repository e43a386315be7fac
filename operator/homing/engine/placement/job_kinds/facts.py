"""What a job says about its topology, read from the pod and its PodGroup. The pod
wins; a key both set to different values is a contradiction (a warning, then the
node strategy)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homing.engine.identity.accelerators import AcceleratorRequest, accelerator_request
from homing.engine.identity.rank import shown

GROUP_NAME_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")


@dataclass(frozen=True, slots=True)
class JobFacts:
    pod: dict[str, Any] = field(default_factory=dict)  # pod annotations and labels, merged
    group: dict[str, Any] = field(default_factory=dict)  # PodGroup annotations and labels, merged
    group_spec: dict[str, Any] = field(default_factory=dict)
    node_selector: dict[str, Any] = field(default_factory=dict)
    pod_labels: dict[str, Any] = field(default_factory=dict)
    npus_per_pod: int = 0
    home_npus: int | None = None  # allocatable accelerators of the rank's home node
    npus_unreadable: str | None = None  # an accelerator request that is not a count: npus_per_pod is unknown

    def value(self, key: str) -> tuple[str | None, str | None]:
        """(value, contradiction warning)."""
        mine, theirs = self.pod.get(key), self.group.get(key)
        if mine is not None and theirs is not None and str(mine) != str(theirs):
            return None, f"pod says {key}={shown(mine)} but its PodGroup says {shown(theirs)}"
        value = mine if mine is not None else theirs
        return (None if value is None else str(value)), None

    @property
    def min_member(self) -> int | None:
        value = self.group_spec.get("minMember")
        return value if isinstance(value, int) and value > 0 else None


def _merged(meta: dict[str, Any]) -> dict[str, Any]:
    return {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}


def group_name(pod: dict[str, Any]) -> str | None:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    for key in GROUP_NAME_ANNOTATIONS:
        if annotations.get(key):
            return str(annotations[key])
    return None


def job_facts(pod: dict[str, Any], podgroup: dict[str, Any] | None, resource_prefixes: tuple[str, ...], home_npus: int | None,
              request: AcceleratorRequest | None = None) -> JobFacts:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    request = request or accelerator_request(pod, resource_prefixes)
    group_meta = (podgroup or {}).get("metadata") or {}
    return JobFacts(
        pod=_merged(meta),
        group=_merged(group_meta),
        group_spec=(podgroup or {}).get("spec") or {},
        node_selector=spec.get("nodeSelector") or {},
        pod_labels=meta.get("labels") or {},
        npus_per_pod=request.count,
        home_npus=home_npus,
        npus_unreadable=request.unreadable,
    )
