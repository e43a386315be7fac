"""Free homes promised to pending rankless pods (behaviour.md "Admission"): one pod a
home, held while the pod waits, released when it binds or goes, expired when its pod is
never seen."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Promise:
    """A free home promised to one pending rankless pod."""

    expires: float
    pod: str | None = None  # the pod's UID once the watch has seen it: then it never expires


@dataclass(slots=True)
class Promises:
    promises: dict[str, dict[str, Promise]] = field(default_factory=dict)  # owner key -> node -> promise

    def make(self, key: str, node: str, now: float, lasts: float) -> None:
        self.promises.setdefault(key, {})[node] = Promise(expires=now + lasts)

    def claim(self, key: str, node: str, pod_uid: str, now: float) -> None:
        """The pending pod carrying the promise of `node` was seen: it keeps the promise
        however long it waits (also after a restart, which rebuilds promises this way)."""
        nodes = self.promises.setdefault(key, {})
        held = nodes.get(node)
        if held is None or held.pod is None:  # held by another pod: that one keeps it
            nodes[node] = Promise(expires=now, pod=pod_uid)

    def nodes(self, key: str, now: float) -> set[str]:
        return {node for node, p in self.promises.get(key, {}).items() if p.pod is not None or p.expires > now}

    def release(self, key: str, node: str, pod_uid: str | None = None) -> None:
        """Ends the promise of `node` when it is unheld or held by `pod_uid`."""
        nodes = self.promises.get(key)
        if nodes is None:
            return
        held = nodes.get(node)
        if held is not None and held.pod in (None, pod_uid):
            del nodes[node]
        if not nodes:
            del self.promises[key]

    def drop_expired(self, now: float) -> None:
        for key in list(self.promises):
            nodes = self.promises[key]
            for node in [n for n, p in nodes.items() if p.pod is None and p.expires <= now]:
                del nodes[node]
            if not nodes:
                del self.promises[key]

    def forget(self, key: str) -> None:
        self.promises.pop(key, None)
