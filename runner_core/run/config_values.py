"""The value rules every table of config.toml shares that its schema cannot say: an argv's
program named by its first word, variable patterns kept sorted and once each, and paths in
the checkout.

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


def checkout_paths(key: str, value: list[str]) -> tuple[str, ...]:
    """Paths of files in the checkout, relative to its top (`package.json`, `app/uv.lock`),
    sorted and without repeats."""
    for path in value:
        parts = path.split("/")
        if (
            "\0" in path
            or "\\" in path
            or path.startswith("/")
            or any(part in ("", ".", "..") for part in parts)
        ):
            raise ConfigError(
                key,
                f"must hold paths of files in the checkout, relative to its top, without "
                f"'.', '..' or a trailing '/' (e.g. \"package-lock.json\"), got {path!r}",
            )
    return tuple(sorted(set(value)))
