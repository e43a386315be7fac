"""The settings' optional YAML file (config.py): a mounted ConfigMap, its path in
HOMING_CONFIG_FILE; the environment wins over it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic_settings import PydanticBaseSettingsSource


class YamlFileSource(PydanticBaseSettingsSource):
    """The optional ConfigMap, mounted as a YAML file."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("HOMING_CONFIG_FILE")
        if not path or not Path(path).is_file():
            return {}
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping at the top level")
        return data
