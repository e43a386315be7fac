"""behaviour.md "Beyond the home": which images a pod runs and which nodes hold them.

A container image reference and a kubelet's `status.images[].names` entry name the same
image when they are equal after normalising Docker Hub's implied parts: `nginx:1.25`,
`library/nginx:1.25` and `docker.io/library/nginx:1.25` are one image; a reference with no
tag means `:latest`. Digests (`repo@sha256:…`) match digests."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

DOCKER_HUB = ("docker.io/library/", "docker.io/", "index.docker.io/library/", "index.docker.io/", "library/")
MAX_IMAGE_NAMES = 256  # names read from one node's status (the kubelet reports 50 images by default)


def normalise(ref: str) -> str:
    """One spelling of an image reference; '' for nothing usable."""
    ref = ref.strip()
    if not ref or any(c.isspace() for c in ref):
        return ""
    for prefix in DOCKER_HUB:
        if ref.startswith(prefix):
            ref = ref[len(prefix):]
            break
    if "@" in ref:
        return ref
    last = ref.rsplit("/", 1)[-1]
    return ref if ":" in last else f"{ref}:latest"


def pod_images(pod: dict[str, Any]) -> tuple[str, ...]:
    """The images of the pod's (not init) containers, normalised, in order, once each."""
    containers = (pod.get("spec") or {}).get("containers")
    refs = (c.get("image") for c in containers if isinstance(c, dict)) if isinstance(containers, list) else ()
    return tuple(dict.fromkeys(n for n in (normalise(r) for r in refs if isinstance(r, str)) if n))


def node_images(node: dict[str, Any]) -> frozenset[str]:
    """Every name under which the node's kubelet reports an image it holds."""
    images = (node.get("status") or {}).get("images")
    names: list[str] = []
    for image in images if isinstance(images, list) else ():
        for name in (image.get("names") if isinstance(image, dict) else None) or ():
            if isinstance(name, str) and len(names) < MAX_IMAGE_NAMES:
                names.append(name)
    return frozenset(n for n in map(normalise, names) if n)


def holding_all(images: Iterable[str], nodes_of: dict[str, set[str]]) -> set[str]:
    """Nodes that hold every one of `images` by `nodes_of` (image -> nodes)."""
    found: set[str] | None = None
    for image in images:
        holders = nodes_of.get(image, set())
        found = set(holders) if found is None else found & holders
        if not found:
            return set()
    return found or set()
