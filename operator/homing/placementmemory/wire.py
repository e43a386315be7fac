"""What an object costs on the wire (an upper bound of what the API server stores), and
the escapes the compact rows use."""
from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import unquote

_PLAIN = re.compile(r"[ !#-%'-;=?-\[\]-~]*")  # printable ASCII that JSON (Go's too) copies as is
ROW_SPECIALS = re.compile("[%\n]")  # "%" escapes, "\n" ends a line
PATH_SPECIALS = re.compile("[% =\n]")  # and " " "=" separate levels and values


def json_wire_size(value: Any) -> int:
    """Bytes of `value` as JSON on the wire, or more: Python's ASCII JSON is never shorter
    than the API server's, but for < > & (Go writes \\u003c) and \\b \\f (\\u0008)."""
    text = json.dumps(value, separators=(",", ":"))
    return len(text) + 5 * sum(text.count(c) for c in "<>&") + 4 * (text.count("\\b") + text.count("\\f"))


def wire_len(text: str) -> int:
    """Bytes of `text` inside a JSON string on the wire, or more."""
    return len(text) if _PLAIN.fullmatch(text) else json_wire_size(text) - 2


def escape(text: str, specials: re.Pattern[str] = ROW_SPECIALS) -> str:
    """Percent-escape the characters that would split a line or a field."""
    return specials.sub(lambda m: f"%{ord(m.group()):02X}", text) if specials.search(text) else text


def unescape(text: str) -> str:
    return unquote(text) if "%" in text else text


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))
