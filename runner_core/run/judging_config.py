"""The config keys of how the guard's verdicts and the loop's budget are judged:
`[guard] require_targets` and `[loop] max_agent_iterations`, their checks and their lines in
the rendered config. Decides nothing else; config.py builds the Config from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import example_line, toml_line


def parse_require_targets(guard: Mapping[str, Any], mode: str) -> bool:
    """`[guard] require_targets`: only with `mode = "ratchet"`."""
    value: bool = guard.get("require_targets", False)
    if value and mode != "ratchet":
        raise ConfigError(
            "guard.require_targets",
            'needs mode = "ratchet" (exit mode judges no target tests): set guard.mode',
        )
    return value


def require_targets_line(value: bool) -> str:
    """`[guard] require_targets` as the rendered config says it."""
    return toml_line("require_targets", value, "ratchet: a node naming no `test:` fails")


def agent_iterations_line(value: int | None) -> str:
    """`[loop] max_agent_iterations` as the rendered config says it (a comment while unset)."""
    if value is None:
        return example_line(
            "max_agent_iterations", 50, "cap on iterations whose agent answered (a night's)"
        )
    return toml_line("max_agent_iterations", value, "iterations an agent answered")
