"""behaviour.md "Beyond the home": which images a pod runs and which nodes hold them.

A container image reference and a kubelet's `status.images[].names` entry name the same
image when they are equal after normalising Docker Hub's implied parts: `nginx:1.25`,
`library/nginx:1.25` and `docker.io/library/nginx:1.25` are one image; a reference with no
tag means `:latest`. Digests (`repo@sha256:…`) match digests."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

DOCKER_HUB = ("docker.io/library/", "docker.io/", "index.docker.io/library/", "index.docker.io/", "library/")
MAX_IMAGE_NAMES = 256  # names read from one node's status (the kubelet reports 50 images by default)
# Image labels on one node: the kubelet reports its 50 largest images, two names each at
# most (a tag and a digest); past the size floor a node holds far fewer.
MAX_IMAGE_LABELS = 64
_LABEL_VALUE_BAD = re.compile(r"[^A-Za-z0-9_.-]")


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


# behaviour.md "Beyond the home", image labels: a term written at admission names nodes as
# they were then; the scheduler binds minutes or hours later, when a home may have lost the
# image. A node label per large image it holds lets a term ask "holds the image" at bind time.

def image_label(name: str, prefix: str) -> str:
    """The label key that says a node holds image `name` (normalised): a label name is at
    most 63 characters of [A-Za-z0-9_.-], so the name is hashed."""
    return f"{prefix}/{hashlib.sha256(name.encode()).hexdigest()[:40]}"


def image_label_value(name: str) -> str:
    """The label's value: the image's name as far as a label value can spell it, for people
    reading `kubectl get node --show-labels` (terms test only that the key exists)."""
    value = _LABEL_VALUE_BAD.sub("_", name)[-63:].strip("_.-")
    return value or "image"


def wanted_image_labels(node: dict[str, Any], prefix: str, min_bytes: int) -> dict[str, str]:
    """The image labels a node should carry: one per name of each image its kubelet reports
    at `min_bytes` or larger, largest images first, at most MAX_IMAGE_LABELS."""
    images = (node.get("status") or {}).get("images")
    sized: list[tuple[int, str]] = []
    for image in images if isinstance(images, list) else ():
        if not isinstance(image, dict):
            continue
        size = image.get("sizeBytes")
        names = image.get("names")
        if not isinstance(size, int) or size < min_bytes or not isinstance(names, list):
            continue
        sized.extend((size, n) for n in map(normalise, (x for x in names[:8] if isinstance(x, str))) if n)
    sized.sort(key=lambda s: (-s[0], s[1]))
    out: dict[str, str] = {}
    for _, name in sized:
        if len(out) >= MAX_IMAGE_LABELS:
            break
        out.setdefault(image_label(name, prefix), image_label_value(name))
    return out


def image_labels_of(labels: Mapping[str, str], prefix: str) -> frozenset[str]:
    """The image label keys a node carries now."""
    start = prefix + "/"
    return frozenset(k for k in labels if k.startswith(start))
