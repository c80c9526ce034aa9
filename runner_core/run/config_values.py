"""The value parsers every table of config.toml shares: argvs, bounded integers, absolute paths,
paths in the checkout and variable-name patterns, each raising `ConfigError` naming the key.

Decides only what a well-formed value of each kind is; never which key holds which kind
(runner_core.run.config and runner_core.run.sandbox_config do).
"""

from __future__ import annotations

import re
from typing import Any

from runner_core.run.config_errors import ConfigError


def argv(key: str, value: Any, *, allow_empty: bool) -> tuple[str, ...]:
    """An argv: a non-empty array of strings (unless `allow_empty`), its program named."""
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise ConfigError(key, f"must be an array of strings (argv, no shell), got {value!r}")
    if not value and not allow_empty:
        raise ConfigError(key, "must not be empty")
    if value and not value[0]:
        raise ConfigError(key, "the program (first element) must not be empty")
    if any("\0" in part for part in value):
        raise ConfigError(key, "must not contain NUL characters (no program can receive them)")
    return tuple(value)


def bounded_int(key: str, value: Any, low: int, high: int, *, each_bound: bool = False) -> int:
    """An integer in [low, high]. `each_bound` names only the bound passed (`must be > 0`,
    `must be at most N`), the top-level counts' wording; the tables' name both."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if low <= value <= high:
        return value
    # A huge integer is not printed whole (past 4300 digits str() itself refuses).
    shown = str(value) if abs(value) < 10**20 else "a number of more than 20 digits"
    if not each_bound:
        raise ConfigError(key, f"must be between {low} and {high}, got {shown}")
    if value < low:
        raise ConfigError(key, f"must be > {low - 1}, got {shown}")
    raise ConfigError(key, f"must be at most {high}, got {shown}")


def absolute_paths(key: str, value: Any) -> tuple[str, ...]:
    """Absolute paths, as an argv of them."""
    paths = argv(key, value, allow_empty=True)
    for path in paths:
        if not path.startswith("/"):
            raise ConfigError(key, f"must hold absolute paths, got {path!r}")
    return paths


def checkout_paths(key: str, value: Any) -> tuple[str, ...]:
    """Paths of files in the checkout, relative to its top (`package.json`, `app/uv.lock`),
    sorted and without repeats."""
    if not isinstance(value, list) or not all(isinstance(path, str) for path in value):
        raise ConfigError(key, f"must be an array of strings (paths), got {value!r}")
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


_ENV_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


def env_patterns(key: str, value: Any) -> tuple[str, ...]:
    """Variable names, or `PREFIX_*` for every variable starting with PREFIX_, sorted."""
    names = argv(key, value, allow_empty=True)
    for name in names:
        if not _ENV_PATTERN.fullmatch(name):
            raise ConfigError(key, f"must hold variable names or PREFIX_* patterns, got {name!r}")
    return tuple(sorted(set(names)))
