"""Template text inside plain objects: a placeholder stands where Helm template text goes,
the object is dumped as YAML, then each placeholder is replaced by its text.

Two kinds: an inline placeholder is a scalar (`replicas: {{ .Values.replicas }}`); a block
placeholder is a mapping key or list item whose whole line becomes several template lines
(a `{{- if }}` around extra entries), indented like the line it replaces."""
from __future__ import annotations

import re
from typing import Any

import yaml

_TOKEN = re.compile(r"__HELM_(\d+)__")


class Placeholders:
    """Hands out placeholders; the same text always gets the same one, so two objects
    templated alike compare equal before they are dumped (overlay.py relies on that)."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._blocks: set[int] = set()

    def _token(self, text: str, block: bool) -> str:
        if text not in self._texts:
            self._texts.append(text)
        index = self._texts.index(text)
        if block:
            self._blocks.add(index)
        return f"__HELM_{index}__"

    def inline(self, text: str) -> str:
        return self._token(text, block=False)

    def block(self, opening: str, body: Any, closing: str = "{{- end }}") -> str:
        """`body` (a mapping or list of entries, or template text) between two template lines."""
        text = body if isinstance(body, str) else dump(body).rstrip("\n")
        return self._token("\n".join([opening, text, closing]), block=True)

    def expand(self, text: str) -> str:
        # Blocks may hold placeholders of their own: expand until none is left.
        while _TOKEN.search(text):
            text = "\n".join(self._expand_line(line) for line in text.split("\n"))
        return text

    def _expand_line(self, line: str) -> str:
        found = _TOKEN.search(line)
        if not found:
            return line
        index = int(found.group(1))
        if index not in self._blocks:
            return _TOKEN.sub(lambda m: self._texts[int(m.group(1))], line)
        stripped = line.lstrip(" ")
        indent = " " * (len(line) - len(stripped))
        if stripped.startswith("- "):  # a list item: the block's own items carry the dash
            stripped = stripped[2:]
        if stripped not in (found.group(0), found.group(0) + ": null"):
            raise ValueError(f"block placeholder not alone on its line: {line!r}")
        return "\n".join(indent + part if part else part for part in self._texts[index].split("\n"))


_BRACES = re.compile(r"\{\{|\}\}")


def escape(obj: Any) -> Any:
    """`obj` with every `{{` and `}}` in its strings as template text that prints them
    (a PrometheusRule's `{{ $labels.x }}` must reach the cluster unchanged)."""
    if isinstance(obj, str):
        return _BRACES.sub(lambda m: '{{ "' + m.group(0) + '" }}', obj)
    if isinstance(obj, dict):
        return {escape(k): escape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [escape(v) for v in obj]
    return obj


class _NoAliases(yaml.SafeDumper):
    """Shared sub-objects are written out each time, never as anchors (not every tool reads them)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def dump(obj: Any) -> str:
    # No line folding: a placeholder or a namespace name is never split across lines.
    return yaml.dump(obj, Dumper=_NoAliases, sort_keys=False, width=float("inf"))
