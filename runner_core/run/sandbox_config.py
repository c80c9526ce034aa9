"""`[sandbox]` of config.toml: whether agents and guards run in bubblewrap, what more they see,
are passed and reach, and their limits (docs/sandbox.md).

Decides which keys `[sandbox]` holds, their defaults and bounds, and how the table is written
back; never whether bubblewrap works here (runner_shell.sandbox.status does).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.backends.egress import HostRuleError, parse_host_rule
from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import example_line, toml_line
from runner_core.run.config_values import argv, env_patterns

SANDBOX_MODES = ("auto", "bwrap", "off")  # schemas/config.schema.json's `[sandbox] mode`


def parse_allow_hosts(value: Any) -> tuple[str, ...]:
    """`[sandbox] allow_hosts` from parsed TOML: a list of rules, each checked, in their
    canonical spelling, sorted and without repeats; ConfigError naming the key if not."""
    texts = set()
    for entry in value:
        try:
            texts.add(parse_host_rule(entry).text)
        except HostRuleError as error:
            raise ConfigError("sandbox.allow_hosts", str(error)) from None
    return tuple(sorted(texts))


@attrs.frozen(slots=True)
class SandboxConfig:
    """`[sandbox]`: whether the agent and guard run in bubblewrap, and a slot's setup command.

    `auto` sandboxes when bubblewrap works here and says so when it does not; `bwrap` refuses
    to run without it; `off` never sandboxes. `setup` (an argv; () is none) runs once in a new
    slot, so what it installs is there for every later agent and guard in that slot.
    """

    mode: str = "auto"
    setup: tuple[str, ...] = ()
    # Absolute paths the sandboxed agent and guard also see: writable (a shared cache) or
    # read-only (a toolchain outside the system directories).
    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    # Variables of the runner's environment an agent also gets (names, or `PREFIX_*`), beyond
    # the allow-list of runner_core.run.environment.
    env: tuple[str, ...] = ()
    # Limits of every sandboxed process (runner_shell.sandbox.limits): the memory one process
    # may allocate, the processes of one sandbox, the largest file it writes, its /tmp.
    memory_mb: int = 8192
    pids_max: int = 2048
    disk_mb: int = 4096
    tmp_mb: int = 1024
    # "host:port" entries the agent's egress proxy lets through besides its backend's own
    # (docs/sandbox.md, "What is reachable"), e.g. a model server on this machine.
    allow_hosts: tuple[str, ...] = ()


# The `[sandbox]` of a config.toml without one (a frozen value, shared).
DEFAULT_SANDBOX = SandboxConfig()


def parse_sandbox(section: Mapping[str, Any]) -> SandboxConfig:
    """`[sandbox]` from parsed TOML, defaults for what it leaves out."""
    return attrs.evolve(
        DEFAULT_SANDBOX,
        **{
            **section,
            "setup": argv("sandbox.setup", section.get("setup", [])),
            "writable": tuple(section.get("writable", ())),
            "read_only": tuple(section.get("read_only", ())),
            "env": env_patterns(section.get("env", [])),
            "allow_hosts": parse_allow_hosts(section.get("allow_hosts", [])),
        },
    )


# `[sandbox]` limits: the least that still runs a test suite, and the most any host has.
SANDBOX_LIMITS = MappingProxyType(
    {
        "memory_mb": (64, 1024 * 1024),
        "pids_max": (16, 4_194_304),
        "disk_mb": (1, 1024 * 1024 * 1024),
        "tmp_mb": (1, 1024 * 1024),
    }
)


def limit_reached(key: str, sandbox: SandboxConfig, who: str = "agent") -> str:
    """The agent error of a session that reached `[sandbox]` limit `key` (of SANDBOX_LIMITS):
    `the sandbox's pids_max (256) was reached`, by the agent's session or by its guard."""
    value = getattr(sandbox, key) if key in SANDBOX_LIMITS else "?"
    by = "; the session was ended" if who == "agent" else " by the guard"
    return (
        f"the sandbox's {key} ({value}) was reached{by} (do less at once, or raise "
        f"[sandbox] {key} in .runner/state/config.toml)"
    )


def render_sandbox_table(sandbox: SandboxConfig) -> str:
    """The `[sandbox]` table; an unset setup command is a comment."""
    setup_comment = "argv run once in each new scratch checkout"
    return (
        "\n[sandbox]\n"
        + toml_line("mode", sandbox.mode, '"auto" | "bwrap" | "off"; see docs/sandbox.md')
        + (
            toml_line("setup", sandbox.setup, setup_comment)
            if sandbox.setup
            else example_line("setup", ("uv", "sync"), setup_comment)
        )
        + "".join(
            toml_line(key, paths, "absolute paths the agent and guard also see")
            for key, paths in (("writable", sandbox.writable), ("read_only", sandbox.read_only))
            if paths
        )
        + (toml_line("env", sandbox.env, "variables the agent also gets") if sandbox.env else "")
        + "".join(
            toml_line(key, getattr(sandbox, key))
            for key in SANDBOX_LIMITS
            if getattr(sandbox, key) != getattr(DEFAULT_SANDBOX, key)
        )
        + (
            toml_line("allow_hosts", sandbox.allow_hosts, "host:port the agent may reach")
            if sandbox.allow_hosts
            else ""
        )
    )
