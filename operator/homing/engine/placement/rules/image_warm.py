"""Image-warm (behaviour.md "Beyond the home"): a node that already holds the pod's images starts it in
seconds instead of pulling tens of gigabytes. Weight `image_warm` sits below every domain step
and above `keep_clear`, so inside a level the order is image-warm and clear > image-warm >
clear > the rest; the weights check proves it for any setting."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def image_warm_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("image-warm", weight, hostname_key, Operator.IN, nodes)
