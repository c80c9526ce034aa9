"""Which programs of a run can be checked before the loop starts them (`runner start`,
`runner step`): the rule; the shell looks each one up on PATH or in the checkout."""

from __future__ import annotations

from collections.abc import Sequence

from runner_core.run.config import Config


def checked_programs(config: Config, agents: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """`(config key, argv[0])` of every program the loop starts that can be checked before it
    does: the `agents` given, the guard and the sandbox setup. A relative path is left out
    when a setup is set: the setup makes it in each scratch checkout (`.venv/bin/python`),
    and the spawn there says so when it is missing."""
    named = [*agents, ("guard.command", config.guard_command[0])]
    if config.sandbox.setup:
        named.append(("sandbox.setup", config.sandbox.setup[0]))
        named = [
            (key, program)
            for key, program in named
            if key == "sandbox.setup" or "/" not in program or program.startswith("/")
        ]
    return named
