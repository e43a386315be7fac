"""Image-warm (behaviour.md "Beyond the home"): a node that already holds the pod's images starts it in
seconds instead of pulling tens of gigabytes. Weight `image_warm` sits below every domain step
and above `keep_clear`, so inside a level the order is image-warm and clear > image-warm >
clear > the rest; the weights check proves it for any setting.

Where the leader labels nodes with the images they hold (behaviour.md "Image labels"), the
term asks for those labels rather than listing host names, so the scheduler judges "warm" when
it binds, not as the nodes were at admission: a gang's rank created in the morning and bound at
night goes where its image is then. The same labels are what the home term asks of the home
(rules/home.py): a home that lost the image is no better than any other cold node."""
from __future__ import annotations

import functools
from collections.abc import Iterable

from homing.engine.cluster.images import image_label
from homing.engine.model import ClusterSnapshot, Expression, Operator, Term
from homing.engine.placement.rules.bounded import bounded
from homing.engine.placement.rules.term import term

label_of = functools.lru_cache(maxsize=4096)(image_label)  # a few images serve every admission


def image_keys(images: Iterable[str], snapshot: ClusterSnapshot, prefix: str) -> tuple[str, ...]:
    """The label keys of the pod's images that some node carries now. An image no node is
    labelled for (too small, or held nowhere, or labels not written) adds no condition:
    every node is equally cold for it."""
    return tuple(k for k in (label_of(i, prefix) for i in images) if k in snapshot.labelled)


def holds(keys: tuple[str, ...]) -> tuple[Expression, ...]:
    """The expressions "the node holds every one of these images"."""
    return tuple((k, Operator.EXISTS, ()) for k in keys)


def image_warm_term(nodes: tuple[str, ...], weight: int, hostname_key: str,
                    keys: tuple[str, ...] = (), off: Iterable[str] = (), limit: int = 256) -> tuple[Term | None, bool]:
    """(the term, whether a list was cut). With `keys`: every node holding the images, except
    `off` (claimed homes, the rank's faults, unhealthy holders), most relevant first. Without:
    the host names `nodes` found warm at admission."""
    if not keys:
        return term("image-warm", weight, hostname_key, Operator.IN, nodes), False
    excluded, cut = bounded(off, limit)
    also = holds(keys[1:]) + (((hostname_key, Operator.NOT_IN, excluded),) if excluded else ())
    return term("image-warm", weight, keys[0], Operator.EXISTS, (), also), cut
