"""Where each image last ran, per namespace (behaviour.md "Beyond the home"): homing's own
memory is read only within the pod's namespace; across namespaces only kubelet reports.
Bounded twice: the nodes kept per image, and the runs kept in all (the images that ran least
recently are forgotten first), so no stream of new image names grows it without end."""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_NODES_PER_IMAGE = 1024  # where one image ran: enough for any term list, bounded for memory


@dataclass(slots=True)
class ImageRuns:
    runs: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (namespace, image) -> node -> when
    max_runs: int = 1_000_000  # (image, node) pairs kept in all
    count: int = 0

    def ran(self, images: tuple[str, ...], node: str, now: float, namespace: str = "") -> None:
        for image in images:
            key = (namespace, image)
            nodes = self.runs.pop(key, None)
            if nodes is None:
                nodes = {}
            self.runs[key] = nodes  # least recently run first: the bound drops from the front
            self.count -= len(nodes)
            nodes.pop(node, None)
            nodes[node] = now  # oldest first: the per-image bound drops the least recent
            if len(nodes) > MAX_NODES_PER_IMAGE:
                del nodes[next(iter(nodes))]
            self.count += len(nodes)
        while self.count > self.max_runs and len(self.runs) > 1:
            oldest = next(iter(self.runs))
            self.count -= len(self.runs.pop(oldest))

    def ran_here(self, images: tuple[str, ...], node: str, namespace: str = "") -> bool:
        return bool(images) and all(node in self.runs.get((namespace, image), ()) for image in images)

    def warm_nodes(self, images: tuple[str, ...], namespace: str = "") -> list[str]:
        """Nodes where every one of `images` ran in `namespace`, most recent first."""
        if not images:
            return []
        runs = [self.runs.get((namespace, image), {}) for image in images]
        first, rest = runs[0], runs[1:]
        when = {n: min([t, *(r[n] for r in rest)]) for n, t in first.items() if all(n in r for r in rest)}
        return sorted(when, key=lambda n: (-when[n], n))
