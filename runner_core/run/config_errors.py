"""What a configuration problem says: the dotted TOML key and the problem with its value, and
what the compiled schemas/config.schema.json raises before a `ConfigError` says it.

Shared by the config's tables (config.py and the tables kept in modules of their own, such as
executor_config.py), so each names its keys the same way. Decides nothing about any value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ConfigError(ValueError):
    """A bad configuration value; `key` is the dotted TOML key."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


class SchemaRefusal(ValueError):
    """What the compiled config schema raises: the fields of fastjsonschema's own
    JsonSchemaValueException, which the generated code raises under that name, without
    importing fastjsonschema (its compiler) into every command that reads the config."""

    def __init__(
        self,
        message: str,
        value: Any = None,
        name: str = "data",
        definition: Mapping[str, Any] | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.value = value
        self.name = name
        self.definition: Mapping[str, Any] = definition or {}
        self.rule = rule
