"""docs/configuration.md from the settings model (config.py): every setting, its environment
variable, its YAML key, its default and what it means, the meaning read from the comments above
and beside the field in config.py, so the reference cannot drift from the code
(tests/adapters/test_configuration_reference.py). Usage: python -m homing.tools.genconfig OUT"""
from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from homing import config
from homing.config import Settings

SOURCE = Path(config.__file__)
HEADER = """# Configuration reference

Generated from the settings model (`operator/homing/config.py`) by `make config-reference`;
do not edit by hand. Each setting is an environment variable `HOMING_<SECTION>__<FIELD>` (or
`HOMING_<FIELD>` at the top level), or the same key in the YAML file named by
`HOMING_CONFIG_FILE` (in-cluster: the `homing-config` ConfigMap, example in
`manifests/examples/config.yaml`); the environment wins. Lists and objects are given as JSON
in the environment.
"""


def comments(source: str) -> dict[tuple[str, str], str]:
    """(class, field) -> the comment lines right above the field, then the comment on its line."""
    trailing: dict[int, str] = {}
    whole: dict[int, str] = {}  # lines that are nothing but a comment
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            (whole if tok.line.strip().startswith("#") else trailing)[tok.start[0]] = text
    found: dict[tuple[str, str], str] = {}
    for cls in ast.parse(source).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            above: list[str] = []
            line = node.lineno - 1
            while line in whole:
                above.insert(0, whole[line])
                line -= 1
            found[(cls.name, node.target.id)] = " ".join([*above, trailing.get(node.lineno, "")]).strip()
    return found


def default_of(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    value = field.get_default(call_default_factory=True)
    if value is PydanticUndefined or value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in value) + "]"
    return f"`{value}`" if isinstance(value, str) else str(value)


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def rows(model: type[BaseModel], names: list[str], env_prefix: str, yaml_prefix: str,
         said: dict[tuple[str, str], str]) -> list[str]:
    return [f"| `{env_prefix}{name.upper()}` | `{yaml_prefix}{name}` | {cell(default_of(model, name))} "
            f"| {cell(said.get((model.__name__, name), ''))} |" for name in names]


def sections() -> list[tuple[str, type[BaseModel]]]:
    return [(name, f.annotation) for name, f in Settings.model_fields.items()
            if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)]


def render() -> str:
    said = comments(SOURCE.read_text())
    table_head = ["| environment variable | YAML key | default | meaning |", "|---|---|---|---|"]
    parts = [HEADER]
    nested = dict(sections())
    top = [n for n in Settings.model_fields if n not in nested]
    parts += ["## Top level", "", *table_head, *rows(Settings, top, "HOMING_", "", said)]
    for name, model in nested.items():
        doc = " ".join((model.__doc__ or "").split())
        parts += ["", f"## {name}", ""]
        if doc:
            parts += [doc, ""]
        parts += [*table_head, *rows(model, list(model.model_fields), f"HOMING_{name.upper()}__", f"{name}.", said)]
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    Path(argv[1]).write_text(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
