"""The first check of config.toml: its parsed TOML against schemas/config.schema.json.

Decides which key a schema error names and what its one line says: the `description` of the
schema node that failed, else of the deepest node on the key's path that has one (`{value!r}`
the key's value, `{item!r}` the element that failed, `{count}` how many elements), or that a key
is unknown. Rules between keys stay with runner_core.run.config. Reads no file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from runner_core.run.config_errors import ConfigError
from runner_core.validation.refusal import SchemaRefusal

CONFIG_SCHEMA_FILE = "config.schema.json"


def check_config_schema(data: Mapping[str, Any]) -> None:
    """Raise `ConfigError` naming the first key of `data` the config schema refuses."""
    # Compiled ahead by scripts/gen_validators.py, apart from the other schemas' larger module.
    from runner_core.run._config_validator import VALIDATORS

    validate: Callable[[Any], Any] = VALIDATORS[CONFIG_SCHEMA_FILE]
    try:
        validate(data)
    except SchemaRefusal as error:
        raise _config_error(data, error) from None


def _config_error(data: Mapping[str, Any], error: SchemaRefusal) -> ConfigError:
    from runner_core.validation.schema import load_schema

    # `data.loop.runner_error_backoff_secs[1]`: keys and indices (no config key is a number).
    names = [name for name in re.split(r"[.\[\]]+", error.name) if name][1:]
    path: list[str | int] = [int(name) if name.isdigit() else name for name in names]
    definition: Mapping[str, Any] = error.definition
    if error.rule == "additionalProperties" and isinstance(error.value, Mapping):
        unknown = sorted(set(error.value) - set(definition.get("properties", {})))[0]
        return ConfigError(_dotted([*path, unknown]), "unknown key")
    depth, described = _described(load_schema(CONFIG_SCHEMA_FILE), path)
    template = str(definition.get("description", described))
    value = _value_at(data, path[:depth])
    problem = template.format(
        value=_Shown.of(value),
        item=_Shown.of(error.value),
        count=len(value) if isinstance(value, list) else 0,
    )
    return ConfigError(_dotted(path[:depth]), problem)


def _described(schema: Mapping[str, Any], path: list[str | int]) -> tuple[int, str]:
    """How much of `path` leads to its deepest schema node with a description, and that
    description."""
    definitions = schema["$defs"]
    node: Mapping[str, Any] = schema
    found = (0, str(schema.get("description", "is not valid")))
    for depth, key in enumerate(path, 1):
        if isinstance(key, str) and key in node.get("properties", {}):
            node = node["properties"][key]
        elif isinstance(key, int) and isinstance(node.get("items"), Mapping):
            node = node["items"]
        else:
            break
        while "$ref" in node:
            node = definitions[node["$ref"].rpartition("/")[2]]
        if "description" in node:
            found = (depth, str(node["description"]))
    return found


def _value_at(data: Any, path: list[str | int]) -> Any:
    for key in path:
        data = data[key]
    return data


def _dotted(path: list[str | int]) -> str:
    """`loop.runner_error_backoff_secs[1]`: keys joined by dots, array indices in brackets."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


class _Shown(str):
    """A value as a problem shows it: its repr, but a huge integer only said to be one (past
    4300 digits `repr` itself refuses)."""

    __slots__ = ()

    @classmethod
    def of(cls, value: Any) -> _Shown:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
            return cls("a number of more than 20 digits")
        return cls(repr(value))

    def __repr__(self) -> str:
        return str(self)
