"""Reading the docs the way a user does: which settings a page names, what default it states
for each, and which configuration examples it shows. Used by test_defaults_stated.py.

A setting is named as `HOMING_SECTION__KEY` (env), `section.key` (YAML) or, where the field
name is unique and has an underscore, `key`; a group goes on with `/ `__OTHER``, `, `.other``
or another full name. A default is stated

- in a table whose header has a "default" (默认) column: that cell, one value a setting
  (`100 / 5 / 100`) or one for all;
- after the name: `KEY` (VALUE …), `KEY` (default VALUE …), `KEYS` (all VALUE), `KEY`; default VALUE,
  (… `KEY`, VALUE)
- before it, opening a parenthesis: "… for 72 h (`lifetimes.ttl_seconds`)": the last values of
  the clause, one a setting, in order;
- "By default (`KEY` off)";
- "The defaults (home 100, domains 32/26/20, …)": a field's name with dashes or spaces.

Values: numbers with units (ms, s, min, h, d, KiB, MiB, 秒, 分钟, 小时 …; `_seconds` and `_bytes`
settings convert), true/false/on/off, unset, `code`. A value of the wrong kind for the setting
is not a statement about it (the paragraph says something else) and is skipped; a table's
default column is always a statement.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from homing.config import Settings

ROOT = Path(__file__).resolve().parents[2]

# Environment variables the project reads that are not settings (the build, the test harness).
NOT_SETTINGS = ("HOMING_CONFIG_FILE", "HOMING_IMAGES", "HOMING_E2E_", "HOMING_BIN_DIR", "HOMING_KIND_BIN_DIR",
                "HOMING_MINDCLUSTER_SRC")

Path_ = tuple[str, ...]


def sections() -> dict[str, type[BaseModel]]:
    out = {}
    for name, field in Settings.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out[name] = field.annotation
    return out


SECTIONS = sections()
TOP_LEVEL = [n for n in Settings.model_fields if n not in SECTIONS]
DEFAULTS = Settings.model_validate({})  # defaults only: model_validate reads no environment


def field_info(path: Path_) -> Any:
    if len(path) == 1:
        return Settings.model_fields[path[0]]
    return SECTIONS[path[0]].model_fields[path[1]]


def all_paths() -> list[Path_]:
    return [(n,) for n in TOP_LEVEL] + [(s, f) for s, m in SECTIONS.items() for f in m.model_fields]


def bare_names() -> dict[str, Path_]:
    """Field names unique across the model that have an underscore: safe to read bare."""
    seen: dict[str, list[Path_]] = {}
    for p in all_paths():
        seen.setdefault(p[-1], []).append(p)
    return {name: ps[0] for name, ps in seen.items() if len(ps) == 1 and "_" in name}


BARE = bare_names()


def accepted(path: Path_) -> list[Any]:
    """What a doc may state as the default: the model's value, and the field's declared
    default where a validator fills it in (weights.free_room: unset, meaning 25)."""
    value: Any = DEFAULTS
    for part in path:
        value = getattr(value, part)
    declared = field_info(path).get_default(call_default_factory=True)
    return [value, declared]


def kind(path: Path_) -> str:
    name = path[-1]
    default = accepted(path)[0]
    if name.endswith("_seconds"):
        return "seconds"
    if name.endswith("_bytes"):
        return "bytes"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int | float):
        return "number"
    if isinstance(default, list):
        return "list"
    if isinstance(default, dict):
        return "mapping"
    return "str"  # strings and unset-by-default fields


def resolve_env(name: str) -> Path_ | None:
    rest = name.removeprefix("HOMING_").lower()
    parts = rest.split("__")
    if len(parts) == 2 and parts[0] in SECTIONS and parts[1] in SECTIONS[parts[0]].model_fields:
        return (parts[0], parts[1])
    if len(parts) == 1 and parts[0] in TOP_LEVEL:
        return (parts[0],)
    return None


def is_setting_env(name: str) -> bool:
    return not name.startswith(NOT_SETTINGS)


# -- values -----------------------------------------------------------------------------------

UNITS = {"ms": 0.001, "seconds": 1, "second": 1, "sec": 1, "s": 1, "minutes": 60, "minute": 60, "min": 60,
         "hours": 3600, "hour": 3600, "h": 3600, "days": 86400, "day": 86400, "d": 86400,
         "weeks": 7 * 86400, "week": 7 * 86400, "years": 365 * 86400, "year": 365 * 86400,
         "秒": 1, "分钟": 60, "小时": 3600, "天": 86400}
BYTES = {"KiB": 1024, "Ki": 1024, "MiB": 1024 ** 2, "Mi": 1024 ** 2, "GiB": 1024 ** 3, "Gi": 1024 ** 3}
_unit_alternatives = "|".join(sorted([*UNITS, *BYTES], key=len, reverse=True))
QUANTITY = re.compile(r"(?<![\w.\-/])(-?\d{1,3}(?:,\d{3})+|-?\d+(?:\.\d+)?)(?:\s?(" + _unit_alternatives + r"))?(?![\w.]|/\d)")
WORD = re.compile(r"(true|false|on|off|unset|开启|关闭|未设置)(?![\w])", re.I)
CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Quantity:
    number: float
    unit: str | None

    def as_kind(self, k: str) -> float | None:
        """The number in the setting's terms, or None when the unit does not fit it."""
        if self.unit is None:
            return self.number if k in ("seconds", "bytes", "number") else None
        if k == "seconds" and self.unit in UNITS:
            return self.number * UNITS[self.unit]
        if k == "bytes" and self.unit in BYTES:
            return self.number * BYTES[self.unit]
        return None


def quantities(text: str) -> list[Quantity]:
    return [Quantity(float(m.group(1).replace(",", "")), m.group(2)) for m in QUANTITY.finditer(text)]


NOTHING = object()


def word_value(word: str) -> Any:
    w = word.lower()
    return {"true": True, "on": True, "开启": True, "false": False, "off": False, "关闭": False,
            "unset": None, "未设置": None}[w]


def parse_token(token: str, path: Path_) -> Any:
    """One stated value (a table cell's part, or the value after a name), in the setting's
    terms; NOTHING when it is not a value of the setting's kind."""
    token = token.strip()
    k = kind(path)
    m = WORD.match(token)
    if m and m.end() == len(token.split(" (")[0].split("（")[0].strip()):
        value = word_value(m.group(1))
        if value is None or k == "bool":
            return value
        return NOTHING
    code = CODE.fullmatch(token.split(" (")[0].strip())
    if code:
        token = code.group(1)
        if k in ("str", "list"):
            try:
                loaded = yaml.safe_load(token)
            except yaml.YAMLError:
                return token
            return loaded if k == "list" or isinstance(loaded, str) else token
    if k == "list":
        numbers = re.fullmatch(r"\s*\[?\s*(\d+(?:\s*[/,]\s*\d+)*)\s*\]?\s*", token.split(" (")[0])
        if numbers:
            return [int(n) for n in re.split(r"\s*[/,]\s*", numbers.group(1))]
        try:
            loaded = yaml.safe_load(token)
        except yaml.YAMLError:
            return NOTHING
        return loaded if isinstance(loaded, list) else NOTHING
    if k == "mapping":  # a label selector, stated as YAML ({} by default)
        try:
            loaded = yaml.safe_load(token)
        except yaml.YAMLError:
            return NOTHING
        return loaded if isinstance(loaded, dict) else NOTHING
    if k in ("seconds", "bytes", "number"):
        found = QUANTITY.match(token)
        if not found:
            return NOTHING
        number = Quantity(float(found.group(1).replace(",", "")), found.group(2)).as_kind(k)
        return NOTHING if number is None else number
    if k == "str" and token and not code and re.fullmatch(r"[\w./:\-]+", token):
        return token
    return NOTHING


def same(stated: Any, path: Path_) -> bool:
    for default in accepted(path):
        if isinstance(stated, float) and isinstance(default, int | float) and not isinstance(default, bool):
            if abs(stated - default) <= 1e-9 * max(1.0, abs(default)):
                return True
        elif stated == default:
            return True
    return False


# -- the text a user reads --------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~)(\w*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(2).lower(), m.group(3)) for m in FENCE.finditer(text)]


def units(text: str) -> Iterator[str]:
    """Prose without code blocks: paragraphs, and each table row on its own."""
    text = FENCE.sub("", text)
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        prose: list[str] = []
        for line in lines:
            if line.lstrip().startswith("|"):
                yield line
            else:
                prose.append(line.strip())
        if prose:
            yield " ".join(prose)


def tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    text = FENCE.sub("", text)
    lines = text.splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and re.fullmatch(r"\s*\|[\s:\-|]+\|\s*", lines[i + 1]):
            header = cells(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append(cells(lines[j]))
                j += 1
            yield header, rows
            i = j
        else:
            i += 1


def cells(line: str) -> list[str]:
    # split on | outside backticks
    out, cur, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


# -- setting names ----------------------------------------------------------------------------

_sections = "|".join(SECTIONS)
FULL = r"HOMING_[A-Z0-9_]*[A-Z0-9]|(?:" + _sections + r")\.[a-z_]+|" + "|".join(sorted(BARE, key=len, reverse=True))
CONT = r"__[A-Z0-9_]*[A-Z0-9]|\.[a-z_]+|" + FULL
GROUP = re.compile(r"`(" + FULL + r")`((?:\s*(?:/|,|、|and|或|和)\s*`(?:" + CONT + r")`)*)")


@dataclass
class Named:
    paths: list[Path_]
    start: int
    end: int


def resolve(token: str, section: str | None) -> Path_ | None:
    if token.startswith("HOMING_"):
        return resolve_env(token)
    if token.startswith("__") and section:
        return resolve_env(f"HOMING_{section.upper()}{token}")
    if token.startswith(".") and section:
        return (section, token[1:]) if token[1:] in SECTIONS[section].model_fields else None
    if "." in token:
        s, f = token.split(".", 1)
        return (s, f) if s in SECTIONS and f in SECTIONS[s].model_fields else None
    return BARE.get(token)


def named_groups(unit: str) -> Iterator[Named]:
    for m in GROUP.finditer(unit):
        tokens = [m.group(1)] + re.findall(r"`([^`]+)`", m.group(2))
        paths: list[Path_] = []
        section: str | None = None
        for t in tokens:
            p = resolve(t, section)
            if p is None:
                paths = []
                break
            paths.append(p)
            if len(p) == 2 and not t.startswith(("__", ".")):
                section = p[0]
        if paths:
            yield Named(paths, m.start(), m.end())


# -- statements ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Statement:
    path: Path_
    stated: Any
    where: str

    def holds(self) -> bool:
        return same(self.stated, self.path)


VALUE = r"(-?\d[\d,]*(?:\.\d+)?(?:\s?(?:" + _unit_alternatives + r"))?|`[^`]+`|true|false|on|off|unset|开启|关闭|未设置)"
AFTER = [
    re.compile(r"\s*[(（]\s*(?:(?:by default|default|默认值?)\s*[:：]?\s*|(all)\s+)?" + VALUE, re.I),
    re.compile(r"\s*[,;，；]\s*(?:default|默认值?)\s*[:：]?\s*" + VALUE, re.I),
    re.compile(r"\s*[,，]\s*" + VALUE + r"\s*(?=[)）,;，；])"),  # (`liveness_port`, 8082, …)
]
BOUNDARY = re.compile(r"(?:\. |; |: |[。；：|]|\(|（)")
# "The defaults (home 100, …)"; not "the old defaults (…)", which tells history.
DEFAULTS_PHRASE = re.compile(r"(?<!old )(?<!earlier )(?<!previous )(?<!former )[Dd]efaults?\s*[(（]([^)）]*)[)）]")


def statements(unit: str, where: str) -> Iterator[Statement]:
    for named in named_groups(unit):
        paths = named.paths
        after = unit[named.end:]
        before = unit[:named.start]
        done = False
        for pattern in AFTER:
            m = pattern.match(after)
            if not m:
                continue
            every = m.lastindex == 2 and m.group(1)
            value_text = m.group(m.lastindex or 1)
            if len(paths) == 1 or every:
                for p in paths:
                    v = parse_token(value_text, p)
                    if v is not NOTHING:
                        yield Statement(p, v, f"{where}: {unit[named.start:named.end + m.end()]!r}")
                done = True
            break
        if done:
            continue
        if re.search(r"default\s*[(（]\s*$|默认\s*[(（]\s*$", before, re.I):
            m = re.match(r"\s+" + VALUE, after)
            if m and len(paths) == 1:
                v = parse_token(m.group(1), paths[0])
                if v is not NOTHING:
                    yield Statement(paths[0], v, f"{where}: {unit[named.start - 10:named.end + m.end()]!r}")
            continue
        if re.search(r"[(（]\s*$", before):
            opening = re.search(r"[(（]\s*$", before)
            assert opening
            clause = before[:opening.start()]
            cut = [b.end() for b in BOUNDARY.finditer(clause)]
            clause = clause[cut[-1]:] if cut else clause
            kinds = [kind(p) for p in paths]
            found = [q for q in quantities(clause) if q.as_kind(kinds[0]) is not None]
            if len(found) >= len(paths):
                for p, q in zip(paths, found[-len(paths):]):
                    v = q.as_kind(kind(p))
                    if v is not None:
                        yield Statement(p, v, f"{where}: {clause.strip()[-60:]!r} ({unit[named.start:named.end]})")
    for m in DEFAULTS_PHRASE.finditer(unit):
        for part in m.group(1).split(","):
            pm = re.match(r"\s*([a-z][a-z \-]*?)\s+(\d+(?:\s*/\s*\d+)*)\b", part)
            if not pm:
                continue
            name = re.sub(r"[ \-]", "_", pm.group(1).strip())
            candidates = [p for p in all_paths() if p[-1] == name and kind(p) in ("number", "list")]
            if len(candidates) != 1:
                continue
            v = parse_token(pm.group(2), candidates[0])
            if v is not NOTHING:
                yield Statement(candidates[0], v, f"{where}: {part.strip()!r}")


def table_statements(text: str, where: str) -> Iterator[Statement | str]:
    """Statements of every table with a default column; a string for a row whose default
    cannot be read as the setting's value."""
    for header, rows in tables(text):
        col = next((i for i, h in enumerate(header) if re.search(r"default|默认", h, re.I)), None)
        if col is None:
            continue
        for row in rows:
            if len(row) <= col:
                continue
            named = [n for c in row[:col] for n in named_groups(c)]
            paths = [p for n in named for p in n.paths]
            if not paths:
                continue
            cell = re.sub(r"\s*[(（][^)）]*[)）]\s*$", "", row[col]).strip()
            parts = [x.strip() for x in re.split(r"\s+/\s+", cell)] if len(paths) > 1 else [cell]
            if len(parts) == 1 and len(paths) > 1:
                parts = parts * len(paths)
            if len(parts) != len(paths):
                yield f"{where}: {len(paths)} settings, {len(parts)} defaults: {row}"
                continue
            for p, part in zip(paths, parts):
                v = parse_token(part, p)
                if v is NOTHING:
                    yield f"{where}: the default of {'.'.join(p)} is not readable: {part!r}"
                else:
                    yield Statement(p, v, f"{where}: table row {row[0]!r}")


def settings_names(text: str) -> Iterator[str]:
    """Every name in the text that claims to be a setting: env names and `section.key` code."""
    for m in re.finditer(r"\bHOMING_[A-Z0-9_]*[A-Z0-9_]", text):
        name = m.group(0)
        if not is_setting_env(name) or name == "HOMING_":
            continue
        yield name
    for code in CODE.findall(FENCE.sub("", text)):
        m = re.fullmatch(r"(" + _sections + r")\.([a-z_]+)(?::.*)?", code.strip())
        if m and not re.search(r"\.(py|md|yaml|yml|json|sh|go|txt|toml)$", code.strip()):
            yield f"{m.group(1)}.{m.group(2)}"


def name_exists(name: str) -> bool:
    if name.startswith("HOMING_"):
        if name.endswith("__"):  # a section's wildcard, HOMING_WEBHOOK__*
            return name.removeprefix("HOMING_").removesuffix("__").lower() in SECTIONS
        return resolve_env(name) is not None
    return resolve(name, None) is not None


# -- examples ---------------------------------------------------------------------------------

def unknown_keys(data: Any, model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Keys the model would ignore (its nested models ignore extras): a misspelt setting."""
    if not isinstance(data, dict):
        return []
    out = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            out.append(prefix + str(key))
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += unknown_keys(value, field.annotation, f"{prefix}{key}.")
    return out


def settings_documents(block: str) -> Iterator[dict[str, Any]]:
    """The settings files in a YAML block: a settings file itself, a ConfigMap's config.yaml,
    Helm values' `config:`."""
    try:
        docs = list(yaml.safe_load_all(block))
    except yaml.YAMLError:
        return
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "ConfigMap" and isinstance(doc.get("data"), dict) and "config.yaml" in doc["data"]:
            inner = yaml.safe_load(doc["data"]["config.yaml"]) or {}
            if isinstance(inner, dict):
                yield inner
        elif isinstance(doc.get("config"), dict):
            yield doc["config"]
        elif any(k in SECTIONS for k in doc) and all(k in Settings.model_fields for k in doc if k not in ("apiVersion", "kind")):
            yield doc


def env_lists(block: str) -> Iterator[dict[str, str]]:
    """HOMING_ variables set in a YAML block's container env lists."""
    try:
        docs = list(yaml.safe_load_all(block))
    except yaml.YAMLError:
        return
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name, value = node.get("name"), node.get("value")
            if isinstance(name, str) and name.startswith("HOMING_") and is_setting_env(name) and value is not None:
                found[name] = str(value)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for doc in docs:
        walk(doc)
    if found:
        yield found


PLACEHOLDER = re.compile(r"[<…$]|\.\.\.")


def env_assignments(text: str) -> Iterator[tuple[str, str]]:
    for m in re.finditer(r"\b(HOMING_[A-Z0-9_]+)=([^\s`'\"|)]+)", text):
        name, value = m.group(1), m.group(2)
        if is_setting_env(name) and not PLACEHOLDER.search(value):
            yield name, value


def inline_settings(text: str) -> Iterator[dict[str, Any]]:
    """`section.key: value` in prose: one setting as a YAML file would hold it."""
    for code in CODE.findall(FENCE.sub("", text)):
        m = re.fullmatch(r"(" + _sections + r")\.([a-z_]+):\s*(.+)", code.strip())
        if m and not PLACEHOLDER.search(m.group(3)):
            yield {m.group(1): {m.group(2): yaml.safe_load(m.group(3))}}


def env_to_settings(env: dict[str, str]) -> Settings:
    """The settings these variables make, as the operator reads them (pydantic-settings)."""
    import os

    saved = {k: v for k, v in os.environ.items() if k.startswith("HOMING_")}
    try:
        for k in saved:
            del os.environ[k]
        os.environ.update(env)
        return Settings()
    finally:
        for k in env:
            os.environ.pop(k, None)
        os.environ.update(saved)


def as_json(value: Any) -> str:
    return json.dumps(value, default=str)
