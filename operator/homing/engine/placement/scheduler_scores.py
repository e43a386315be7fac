"""The rest of a node's score: what the shipped scheduler configurations add beside node
affinity, so that the weights check (engine/placement/weights.py) holds against the whole score.

Both schedulers add each scoring plugin's 0-100 score times its weight. Node affinity's
is homing's sum of matched weights normalised by the best node's sum; the others do not
know homing's order, and image locality works against it on a claimed home (the node
holds the image of the pod expected back, often the same image)."""
from __future__ import annotations

from dataclasses import dataclass

MAX_NODE_SCORE = 100  # both schedulers' plugin scores are 0..100
# How far the resource-balancing scores (least requested, balanced allocation) of two
# nodes that can both take a whole-node accelerator pod may differ: nodes of one shape
# with no accelerator pod on them differ only by their small CPU/memory pods; 25 points
# is one node with a quarter more of its CPU and memory requested than the other.
RESOURCE_SPREAD = 25


@dataclass(frozen=True, slots=True)
class SchedulerProfile:
    """One shipped configuration: node affinity's weight, and the weights of the plugins
    whose scores can differ between two nodes that both fit the pod."""

    name: str
    node_affinity: int
    image_locality: int
    resource_plugins: int  # sum of the resource-balancing plugins' weights

    @property
    def other_spread(self) -> int:
        """The most the other plugins can add to one fitting node over another."""
        return MAX_NODE_SCORE * self.image_locality + RESOURCE_SPREAD * self.resource_plugins

    def points_to_win(self) -> int:
        """Normalised affinity points one node must lead by to win the whole score."""
        return self.other_spread // self.node_affinity + 1


# manifests/tidal/*/volcano-scheduler.conf: nodeorder with nodeaffinity.weight 10, image
# locality, least requested and balanced resource at Volcano's default weight of 1.
VOLCANO = SchedulerProfile("volcano (manifests/tidal)", node_affinity=10, image_locality=1, resource_plugins=2)
# manifests/kube-scheduler/scheduler-config.yaml: the default profile with NodeAffinity's
# score weight raised to 10; ImageLocality, NodeResourcesFit, BalancedAllocation at 1.
KUBE_SCHEDULER = SchedulerProfile("kube-scheduler (manifests/kube-scheduler)", node_affinity=10, image_locality=1,
                                  resource_plugins=2)
SHIPPED = (VOLCANO, KUBE_SCHEDULER)


def points_to_win(profiles: tuple[SchedulerProfile, ...] = SHIPPED) -> int:
    return max(p.points_to_win() for p in profiles)
