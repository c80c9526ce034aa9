"""`[agent]` and its per-role tables `[agent.decomposer]` and `[agent.executor]`.

Decides what each table may say (a backend of the registry, its argv, its fallback chain) and
what a role table leaves to `[agent]` (runner_core.run.role_agents applies them to an iteration).
A role table's keys left out take `[agent]`'s values, except that `command` and `fallback`
belong to `[agent]`'s backend: a role naming another backend starts without them. Never reads
the file: runner_core.run.config hands in the parsed tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import attrs

from runner_core.backends.registry import BACKENDS, BackendName, FallbackBackend
from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import toml_line
from runner_core.run.config_values import argv as _argv

ROLE_TABLES = ("decomposer", "executor")


@attrs.frozen(slots=True)
class RoleAgent:
    """The agent one role runs: its `backend`, the `command` that replaces the backend's
    program (() for none) and the `fallback` backends run in turn while it is limited."""

    backend: BackendName
    command: tuple[str, ...] = ()
    fallback: tuple[FallbackBackend, ...] = ()


def parse_agent_table(key: str, table: Mapping[str, Any], inherited: RoleAgent) -> RoleAgent:
    """An agent table (`key` names it: "agent", "agent.executor") from parsed TOML, with
    `inherited`'s values for the keys it leaves out (see the module)."""
    backend: BackendName = table.get("backend", inherited.backend)
    same = backend == inherited.backend
    command = _argv(f"{key}.command", table.get("command", list(inherited.command) if same else []))
    if BACKENDS[backend].program is None and not command:
        raise ConfigError(
            f"{key}.command", f'must name the agent program when backend = "{backend}"'
        )
    fallback = parse_fallback(
        f"{key}.fallback", table.get("fallback", list(inherited.fallback) if same else []), backend
    )
    return RoleAgent(backend, command, fallback)


def parse_role_tables(
    agent: Mapping[str, Any], base: RoleAgent
) -> tuple[RoleAgent | None, RoleAgent | None]:
    """`[agent.decomposer]` and `[agent.executor]`, each None when left out."""
    decomposer, executor = (
        parse_agent_table(f"agent.{role}", agent[role], base) if role in agent else None
        for role in ROLE_TABLES
    )
    return decomposer, executor


def parse_fallback(key: str, value: list[str], backend: str) -> tuple[FallbackBackend, ...]:
    """`fallback`: backends of the schema's (each with its own program, which the schema has
    checked), none twice and not the table's `backend` itself."""
    if len(set(value)) != len(value) or backend in value:
        table = key.rpartition(".")[0]
        raise ConfigError(key, f"names a backend twice or names {table}.backend: {value!r}")
    return tuple(cast(FallbackBackend, name) for name in value)


def render_role_table(role: str, agent: RoleAgent | None) -> str:
    """`[agent.<role>]` with every key spelled out, or "" when the role has no table."""
    if agent is None:
        return ""
    return (
        f"\n[agent.{role}]  # what {role} iterations run instead of [agent]\n"
        + toml_line("backend", agent.backend)
        + toml_line("command", agent.command)
        + toml_line("fallback", agent.fallback)
    )
