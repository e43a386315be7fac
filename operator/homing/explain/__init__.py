"""`homing explain`: pure functions from API objects (pods, Events, namespaces,
PlacementMemory objects) to an explanation; the CLI (homing/cli) only fetches them."""
from homing.explain.owner import OwnerExplanation, OwnerList, explain_owner, list_owners
from homing.explain.pod import NotInScope, PodExplanation, explain_pod

__all__ = ["NotInScope", "OwnerExplanation", "OwnerList", "PodExplanation", "explain_owner", "explain_pod", "list_owners"]
