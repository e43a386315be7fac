"""A HyperNode member's selector, compiled (hypernodes.py): by exact name, by regex over the
name (with the literal prefix every match starts with, for lookups), or by label
requirements. A malformed member selects nothing."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homing.engine.cluster import labelselector
from homing.engine.cluster.labelselector import Requirement
from homing.engine.model import DomainExpr

PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/:@=,;'\"<>%&!~` ")  # regex chars that match themselves
OPTIONAL = frozenset("*?{")  # quantifiers that may drop the character before them


@dataclass(frozen=True, slots=True)
class Member:
    """One member selector, compiled: by exact name, by regex over the name, or by label
    requirements. With none of them it selects nothing."""

    exact: str | None = None
    pattern: re.Pattern[str] | None = None
    prefix: str = ""  # every name the pattern matches starts with it
    requirements: tuple[Requirement, ...] = ()
    single: DomainExpr | None = None  # the labelMatch as `key In [value]`, when it is one matchLabels entry

    def selects(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.exact is not None:
            return name == self.exact
        if self.pattern is not None:
            return self.pattern.fullmatch(name) is not None
        return bool(self.requirements) and labelselector.holds(self.requirements, labels)


NOTHING = Member()  # a malformed member, or one whose selector selects no object


def literal_prefix(pattern: str) -> str:
    """A prefix every full match of the pattern starts with: its leading plain characters,
    less one a quantifier may drop; "" when unsure (an alternation anywhere, an escape)."""
    if "|" in pattern:
        return ""
    body = pattern[1:] if pattern.startswith("^") else pattern
    end = 0
    while end < len(body) and body[end] in PLAIN:
        end += 1
    if end < len(body) and body[end] in OPTIONAL:
        end -= 1
    return body[:max(end, 0)]


def _single_label(match: Mapping[str, Any]) -> DomainExpr | None:
    """The labelMatch as `key In [value]`, when it is exactly one matchLabels entry."""
    labels = match.get("matchLabels") or {}
    if len(labels) == 1 and not match.get("matchExpressions"):
        (key, value), = labels.items()
        return DomainExpr(key, (value,))
    return None


def member(raw: object) -> Member:
    """A member's selector; exactMatch wins over regexMatch, which wins over labelMatch."""
    selector = raw.get("selector") if isinstance(raw, Mapping) else None
    if not isinstance(selector, Mapping):
        return NOTHING
    if "exactMatch" in selector:
        match = selector["exactMatch"]
        name = match.get("name") if isinstance(match, Mapping) else None
        return Member(exact=name) if isinstance(name, str) else NOTHING
    if "regexMatch" in selector:
        match = selector["regexMatch"]
        pattern = match.get("pattern") if isinstance(match, Mapping) else None
        if not pattern:
            return NOTHING  # an empty pattern fully matches only the empty name, which nothing has
        try:
            return Member(pattern=re.compile(pattern), prefix=literal_prefix(pattern))
        except (re.error, TypeError):
            return NOTHING
    if "labelMatch" in selector:
        match = selector["labelMatch"]
        if labelselector.is_empty(match):
            return NOTHING  # a labelMatch without requirements selects no node: else one empty selector takes them all
        reqs = labelselector.requirements(match)
        return NOTHING if reqs is None else Member(requirements=reqs, single=_single_label(match))
    return NOTHING
