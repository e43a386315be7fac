"""Walks over the HyperNode hierarchy for one change (hypernode_index.py): plain functions
of who contains whom, each O(the part of the hierarchy it visits)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def upwards(name: str, parents: Mapping[str, Iterable[str]]) -> set[str]:
    """The HyperNode and every HyperNode above it."""
    found, todo = {name}, [name]
    while todo:
        for outer in parents.get(todo.pop(), ()):
            if outer not in found:
                found.add(outer)
                todo.append(outer)
    return found


def reaches_itself(name: str, children: Callable[[str], set[str]]) -> bool:
    """Whether the HyperNode is below itself (the one cycle a single change can make)."""
    seen, todo = set(), list(children(name))
    while todo:
        child = todo.pop()
        if child == name:
            return True
        if child not in seen:
            seen.add(child)
            todo.extend(children(child))
    return False


def children_first(stale: set[str], known: Iterable[str], children: Callable[[str], set[str]]) -> list[str]:
    """The stale HyperNodes that exist, each after its stale children (no cycle among them)."""
    order: list[str] = []
    seen: set[str] = set()
    for start in sorted(stale & set(known)):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(children(start)))]
        while stack:
            name, todo = stack[-1]
            child = next((c for c in todo if c in stale and c not in seen), None)
            if child is None:
                stack.pop()
                order.append(name)
            else:
                seen.add(child)
                stack.append((child, iter(children(child))))
    return order
