"""A stand-in scheduler for the demo until the real one arrives (tidal issue): binds a
pending pod to the free node with the highest sum of matched preferred-affinity weights,
which is how kube-scheduler's NodeAffinity plugin ranks nodes. Ties are broken at
random, as balanced-resource scores do among equal empty nodes."""
from __future__ import annotations

import random

from homing.engine.model import Operator, Term
from homing_e2e import objects as o


def preferred_terms(pod: dict) -> list[Term]:
    out = []
    for t in o.terms(pod):
        for e in t["preference"].get("matchExpressions", []):
            if e["operator"] in ("In", "NotIn"):
                out.append(Term(role="", weight=t["weight"], key=e["key"], operator=Operator(e["operator"]), values=tuple(e.get("values", []))))
    return out


def score(pod: dict, node_labels: dict[str, str]) -> int:
    return sum(t.weight for t in preferred_terms(pod) if t.matches(node_labels))


def choose(pod: dict, nodes: dict[str, dict[str, str]], busy: set[str], rng: random.Random) -> str:
    free = [n for n in sorted(nodes) if n not in busy]
    top = max(score(pod, nodes[n]) for n in free)
    return rng.choice([n for n in free if score(pod, nodes[n]) == top])


async def schedule(kube, ns: str, pod_name: str, nodes: dict[str, dict[str, str]], busy: set[str], rng: random.Random) -> str:
    """Binds the pod; `nodes` maps names to labels, `busy` nodes are full."""
    best = choose(await o.get_pod(kube, ns, pod_name), nodes, busy, rng)
    await o.bind(kube, ns, pod_name, best)
    return best
