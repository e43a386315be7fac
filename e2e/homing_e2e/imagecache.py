"""A model of each node's image cache: a disk of fixed size holding whole images, least
recently used evicted first. An image is cached on a node once a pod using it ran
there; a pod that starts where its image is not cached pays a pull."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

MODEL_BANDWIDTH_GBPS = 1.0  # per node, from a registry the whole cluster shares: the days' and the demo's


def pull_minutes(size_gb: float, bandwidth_gbps: float = MODEL_BANDWIDTH_GBPS) -> float:
    """How long the model says a pull of `size_gb` takes."""
    return size_gb * 8 / bandwidth_gbps / 60


@dataclass
class NodeDisk:
    capacity_gb: float
    images: OrderedDict[str, float] = field(default_factory=OrderedDict)  # image -> GB, oldest first

    def has(self, image: str) -> bool:
        return image in self.images

    def use(self, image: str, size_gb: float) -> bool:
        """A pod with `image` starts here. Returns True when the image had to be pulled."""
        if image in self.images:
            self.images.move_to_end(image)
            return False
        while self.images and sum(self.images.values()) + size_gb > self.capacity_gb:
            self.images.popitem(last=False)
        self.images[image] = size_gb
        return True


@dataclass
class ImageCache:
    capacity_gb: float
    bandwidth_gbps: float
    disks: dict[str, NodeDisk] = field(default_factory=dict)
    pulls: int = 0
    pull_minutes: float = 0.0

    def disk(self, node: str) -> NodeDisk:
        return self.disks.setdefault(node, NodeDisk(self.capacity_gb))

    def pull_minutes_for(self, size_gb: float) -> float:
        return pull_minutes(size_gb, self.bandwidth_gbps)

    def start(self, node: str, image: str, size_gb: float) -> bool:
        """Counts the pull when the image was not on the node; returns whether it was."""
        pulled = self.disk(node).use(image, size_gb)
        if pulled:
            self.pulls += 1
            self.pull_minutes += self.pull_minutes_for(size_gb)
        return pulled

    def status_images(self, node: str) -> list[dict]:
        """The node's `status.images`, as a kubelet reports them (ImageLocality reads this)."""
        return [{"names": [image], "sizeBytes": int(gb * 1e9)} for image, gb in reversed(self.disk(node).images.items())]
