"""Configuration (SPEC §7): what `.runner/state/config.toml` may say, and its defaults.

Decides whether parsed TOML data is a valid configuration, naming the key of any problem.
Never reads the file: the shell parses TOML and hands the mapping in.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import attrs

AGENT_BACKENDS = ("claude", "codex", "command")


@attrs.frozen(slots=True)
class Config:
    max_attempts_default: int = 3
    max_iterations: int = 100
    iteration_timeout_secs: int = 1800
    executor_output_limit_bytes: int = 100_000
    guard_output_limit_bytes: int = 100_000
    guard_command: tuple[str, ...] = ("just", "ci")
    agent_backend: str = "codex"
    agent_command: tuple[str, ...] = ()


class ConfigError(ValueError):
    """A bad configuration value; `key` is the dotted TOML key."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


_POSITIVE_INTS = (
    "max_attempts_default",
    "max_iterations",
    "iteration_timeout_secs",
    "executor_output_limit_bytes",
    "guard_output_limit_bytes",
)
_TABLES = {"guard": ("command",), "agent": ("backend", "command")}


def _positive_int(key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if value <= 0:
        raise ConfigError(key, f"must be > 0, got {value}")
    return value


def _argv(key: str, value: Any, *, allow_empty: bool) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise ConfigError(key, f"must be an array of strings (argv, no shell), got {value!r}")
    if not value and not allow_empty:
        raise ConfigError(key, "must not be empty")
    if value and not value[0]:
        raise ConfigError(key, "the program (first element) must not be empty")
    if any("\0" in part for part in value):
        raise ConfigError(key, "must not contain NUL characters (no program can receive them)")
    return tuple(value)


def parse_config(data: Mapping[str, Any]) -> Config:
    """A `Config` from parsed TOML; raises `ConfigError` naming the first bad key."""
    for key in sorted(data):
        if key not in _POSITIVE_INTS and key not in _TABLES:
            raise ConfigError(key, "unknown key")
    for table, keys in sorted(_TABLES.items()):
        section = data.get(table, {})
        if not isinstance(section, dict):
            raise ConfigError(table, "must be a table")
        for key in sorted(section):
            if key not in keys:
                raise ConfigError(f"{table}.{key}", "unknown key")
    defaults = Config()
    numbers = {
        key: _positive_int(key, data[key]) if key in data else getattr(defaults, key)
        for key in _POSITIVE_INTS
    }
    guard = data.get("guard", {})
    agent = data.get("agent", {})
    guard_command = (
        _argv("guard.command", guard["command"], allow_empty=False)
        if "command" in guard
        else defaults.guard_command
    )
    backend = agent.get("backend", defaults.agent_backend)
    if backend not in AGENT_BACKENDS:
        raise ConfigError(
            "agent.backend", f"must be one of {', '.join(AGENT_BACKENDS)}, got {backend!r}"
        )
    agent_command = _argv("agent.command", agent.get("command", []), allow_empty=True)
    if backend == "command" and not agent_command:
        raise ConfigError("agent.command", 'must name the agent program when backend = "command"')
    return Config(
        guard_command=guard_command,
        agent_backend=backend,
        agent_command=agent_command,
        **numbers,
    )


def render_config(config: Config) -> str:
    """TOML text for a config, with the defaults' comments; `parse_config` reads it back."""

    def toml_list(values: tuple[str, ...]) -> str:
        # A JSON string without ensure_ascii is a valid TOML basic string, except that TOML
        # also forbids a raw DEL.
        return (
            "["
            + ", ".join(
                json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f") for value in values
            )
            + "]"
        )

    return (
        f"max_attempts_default = {config.max_attempts_default}  # attempts a new node gets\n"
        f"max_iterations = {config.max_iterations}  # run-level cap on next_iter\n"
        f"iteration_timeout_secs = {config.iteration_timeout_secs}  # agent + guards\n"
        f"executor_output_limit_bytes = {config.executor_output_limit_bytes}\n"
        f"guard_output_limit_bytes = {config.guard_output_limit_bytes}\n"
        "\n"
        "[guard]\n"
        f"command = {toml_list(config.guard_command)}  # argv, no shell; exit 0 = pass\n"
        "\n"
        "[agent]\n"
        f'backend = "{config.agent_backend}"  # "codex" | "claude" | "command"\n'
        f'command = {toml_list(config.agent_command)}  # argv for backend = "command"\n'
    )


def command_words(key: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """A command given on the command line: one shell-quoted string, or one word per value.

    `--guard "python -m pytest -q"` and `--guard python --guard -m ...` mean the same argv.
    """
    if len(values) != 1:
        return values
    try:
        return tuple(shlex.split(values[0]))
    except ValueError as error:
        raise ConfigError(key, f"cannot split {values[0]!r} into words: {error}") from None
