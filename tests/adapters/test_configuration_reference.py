"""docs/configuration.md is the settings model, whole: generated from config.py (make
config-reference), every setting listed with what it means, nothing stale."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from homing.config import Settings
from homing.tools import genconfig

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def every_variable() -> list[str]:
    names = []
    for name, field in Settings.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names += [f"HOMING_{name.upper()}__{inner.upper()}" for inner in model.model_fields]
        else:
            names.append(f"HOMING_{name.upper()}")
    return names


def test_the_reference_is_what_the_settings_model_generates():
    assert REFERENCE.read_text() == genconfig.render(), "docs/configuration.md is stale: run make config-reference"


def test_every_setting_is_listed_once_with_what_it_means():
    lines = {line.split("|")[1].strip().strip("`"): line for line in REFERENCE.read_text().splitlines()
             if line.startswith("| `HOMING_")}
    assert sorted(lines) == sorted(every_variable())
    unexplained = [name for name, line in lines.items() if not line.rstrip(" |").rsplit("|", 1)[1].strip()]
    assert unexplained == [], f"settings with no comment in config.py: {unexplained}"


def test_a_comment_above_and_beside_a_field_both_reach_the_reference():
    source = "class A:\n    # first line\n    # second line\n    x: int = 1  # beside\n    y: int = 2\n"
    assert genconfig.comments(source) == {("A", "x"): "first line second line beside", ("A", "y"): ""}
