"""The value rules every table of config.toml shares that its schema cannot say: an argv's
program named by its first word, and variable patterns kept sorted and once each.

Decides only what a value that passed schemas/config.schema.json still needs; never which key
holds which kind (runner_core.run.config and runner_core.run.sandbox_config do).
"""

from __future__ import annotations

from runner_core.run.config_errors import ConfigError


def argv(key: str, value: list[str]) -> tuple[str, ...]:
    """An argv of the schema's: its program (first element), when it has one, named."""
    if value and not value[0]:
        raise ConfigError(key, "the program (first element) must not be empty")
    return tuple(value)


def env_patterns(value: list[str]) -> tuple[str, ...]:
    """Variable names, or `PREFIX_*` for every variable starting with PREFIX_, sorted."""
    return tuple(sorted(set(value)))
