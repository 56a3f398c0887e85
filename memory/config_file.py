"""`.muma.json`: the settings file source, read after the arguments and the environment.

The working directory's file overrides the home directory's, key by key. Keys may be the
seed's camelCase or snake_case; keys of free-form maps (domain names, agent ids) are kept
exactly as written. An unreadable file or one that is not a JSON object is a ConfigError
naming the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_settings import PydanticBaseSettingsSource

from memory.errors import ConfigError

CONFIG_FILE_NAME = ".muma.json"


def _to_snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).replace("-", "_").lower()


def _normalise_keys(data: Any, model: type[BaseModel]) -> Any:
    """Rename camelCase keys to field names, recursing only into known model fields.

    Keys of free-form maps (domain names, agent ids) are left exactly as written.
    """
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = _to_snake(key) if _to_snake(key) in model.model_fields else key
        field = model.model_fields.get(name)
        if field is not None:
            value = _normalise_value(value, field.annotation)
        out[name] = value
    return out


def _normalise_value(value: Any, annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _normalise_keys(value, annotation)
    args = getattr(annotation, "__args__", ())
    if isinstance(value, dict) and len(args) == 2:
        inner = args[1]
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return {k: _normalise_keys(v, inner) for k, v in value.items()}
    return value


def config_file_paths() -> list[Path]:
    """`.muma.json` candidates, lowest precedence first (home, then working directory)."""
    return [Path.home() / CONFIG_FILE_NAME, Path.cwd() / CONFIG_FILE_NAME]


class JsonFileSource(PydanticBaseSettingsSource):
    """The settings of the `.muma.json` files, merged (the working directory's over the
    home's), keys renamed to the settings' field names."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for path in config_file_paths():
            if not path.is_file():
                continue
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ConfigError(f"cannot read {path}: {exc}", key=str(path)) from exc
            if not isinstance(raw, dict):
                raise ConfigError(f"{path} must hold a JSON object", key=str(path))
            merged = _deep_merge(merged, _normalise_keys(raw, self.settings_cls))
        return merged


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
