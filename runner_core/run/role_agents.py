"""Which agent settings an iteration of a role runs with: `[agent.<role>]` when the config has
that table, else `[agent]`, and a fallback backend the loop chose in place of the role's own.

Decides from a parsed `Config` (runner_core.run.agent_config parses the tables); never reads
the file.
"""

from __future__ import annotations

import attrs

from runner_core.backends.registry import BACKENDS
from runner_core.run.agent_config import ROLE_TABLES, RoleAgent
from runner_core.run.config import Config


def role_config(config: Config, role: str) -> Config:
    """`config` as an iteration of `role` ("decomposer" | "executor") runs it: its agent
    settings those of `[agent.<role>]` when that table is there, else `[agent]`'s."""
    agent: RoleAgent | None = getattr(config, f"agent_{role}")
    if agent is None:
        return config
    return attrs.evolve(
        config,
        agent_backend=agent.backend,
        agent_command=agent.command,
        agent_fallback=agent.fallback,
    )


def role_configs(config: Config) -> tuple[Config, ...]:
    """`config` as each role runs it, each distinct one once: what `validate` and a start check
    the programs of."""
    return tuple(dict.fromkeys(role_config(config, role) for role in ROLE_TABLES))


def iteration_config(config: Config, role: str, backend: str | None = None) -> Config:
    """`config` as one iteration of `role` runs it, on `backend` when the loop chose one of the
    role's fallback chain: a fallback backend runs its own program (`command` belongs to the
    role's own backend)."""
    config = role_config(config, role)
    if backend is None or backend == config.agent_backend:
        return config
    return attrs.evolve(config, agent_backend=BACKENDS[backend].name, agent_command=())
