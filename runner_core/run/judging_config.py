"""The config keys of how the guard's verdicts and the loop's budget are judged:
`[guard] require_targets` and `[loop] max_agent_iterations`, their checks and their lines in
the rendered config. Decides nothing else; config.py builds the Config from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runner_core.run.config_errors import ConfigError


def parse_require_targets(guard: Mapping[str, Any], mode: str) -> bool:
    """`[guard] require_targets`: a boolean, and only with `mode = "ratchet"`."""
    value = guard.get("require_targets", False)
    if not isinstance(value, bool):
        raise ConfigError("guard.require_targets", f"must be true or false, got {value!r}")
    if value and mode != "ratchet":
        raise ConfigError(
            "guard.require_targets",
            'needs mode = "ratchet" (exit mode judges no target tests): set guard.mode',
        )
    return value


def require_targets_line(value: bool) -> str:
    """`[guard] require_targets` as the rendered config says it."""
    said = "true" if value else "false"
    return f"require_targets = {said}  # ratchet: a node naming no `test:` fails\n"


# The most agent iterations a loop may be given: beyond it a value is a typo, never a plan.
MAX_AGENT_ITERATIONS = 1_000_000


def parse_agent_iterations(
    section: Mapping[str, Any], bounded: Callable[[str, Any, int, int], int]
) -> int | None:
    """`[loop] max_agent_iterations`: the cap on iterations whose agent gave an answer (runner
    errors, waits, interrupts and merge reruns do not count); None when unset, and then only
    max_iterations (the cap on next_iter) stops the loop. `bounded` checks the integer."""
    value = section.get("max_agent_iterations")
    if value is None:
        return None
    return bounded("loop.max_agent_iterations", value, 1, MAX_AGENT_ITERATIONS)


def agent_iterations_line(value: int | None) -> str:
    """`[loop] max_agent_iterations` as the rendered config says it (a comment while unset)."""
    if value is None:
        return "# max_agent_iterations = 50  # cap on iterations whose agent answered (a night's)"
    return f"max_agent_iterations = {value}  # iterations an agent answered"
