"""`[sandbox]` of config.toml: whether agents and guards run in bubblewrap, what more they see,
are passed and reach, and their limits (docs/sandbox.md).

Decides which keys `[sandbox]` holds, their defaults and bounds, and how the table is written
back; never whether bubblewrap works here (runner_shell.sandbox.status does).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, get_args

import attrs

from runner_core.backends.egress import HostRuleError, parse_host_rule
from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import example_line, toml_line
from runner_core.run.config_values import argv, checkout_paths, env_patterns

# `[sandbox] mode`: the values of schemas/config.schema.json's enum.
SandboxMode = Literal["auto", "bwrap", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)


# A failed session whose largest process held this share of RLIMIT_DATA reached `memory_mb`
# (where no memory cgroup counts it: docs/sandbox.md, "memory_mb without a memory cgroup").
# Its resident set is less than what RLIMIT_DATA counts (the interpreter's own mappings, the
# step it was refused): a Python loop of 16 MiB steps under 64 MiB peaks at 46 MiB resident
# inside the sandbox. A program failing below half of its limit fails for another reason.
NEAR_MEMORY = 1 / 2


def came_near_memory(failed: bool, peak_bytes: int, limit_bytes: int | None) -> bool:
    """Whether a session ended by its own failure (`failed`) is taken as having reached
    `memory_mb`, RLIMIT_DATA being `limit_bytes` (None: a memory cgroup counts it instead) and
    the largest resident set of its processes `peak_bytes`. A session that succeeded never is."""
    return failed and limit_bytes is not None and peak_bytes >= limit_bytes * NEAR_MEMORY


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
    slot, so what it installs is there for every later agent and guard in that slot, and again
    whenever a file of `setup_inputs` is not as it was when setup last ran there.
    """

    mode: SandboxMode = "auto"
    setup: tuple[str, ...] = ()
    # Files of the checkout setup reads (`package.json`, `uv.lock`), sorted: the agent's change
    # to one runs setup again before its guard, a base whose differ at the slot's reset too.
    setup_inputs: tuple[str, ...] = ()
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
    setup = argv("sandbox.setup", section.get("setup", []))
    setup_inputs = checkout_paths("sandbox.setup_inputs", section.get("setup_inputs", []))
    if setup_inputs and not setup:
        raise ConfigError(
            "sandbox.setup_inputs", "names what [sandbox] setup reads, but there is no setup"
        )
    return attrs.evolve(
        DEFAULT_SANDBOX,
        **{
            **section,
            "setup": setup,
            "setup_inputs": setup_inputs,
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


@attrs.frozen(slots=True)
class LimitHit:
    """A `[sandbox]` limit a session or guard reached, which ended it: `key` of SANDBOX_LIMITS.
    `outside_tasks`: where RLIMIT_NPROC held the pids_max reached (no pids cgroup), how many of
    the tasks it counted were the runner's user's outside the sandbox; None otherwise."""

    key: str
    outside_tasks: int | None = None


def limit_reached(hit: LimitHit, sandbox: SandboxConfig, who: str = "agent") -> str:
    """The agent error of a session that reached the `[sandbox]` limit `hit`:
    `the sandbox's pids_max (256) was reached`, by the agent's session, by its guard or by the
    guard's baseline run (`who`: agent, guard, baseline), with the tasks outside the sandbox
    that counted when there were some."""
    key, outside = hit.key, hit.outside_tasks
    value = getattr(sandbox, key) if key in SANDBOX_LIMITS else "?"
    by = {
        "agent": "; the session was ended",
        "baseline": " by the guard measuring the base commit (the line's own tests)",
    }.get(who, " by the guard")
    counted = (
        ""
        if outside is None
        else f"without a cgroup it counts every task of the runner's user, {outside} of them "
        "outside the sandbox; "
    )
    return (
        f"the sandbox's {key} ({value}) was reached{by} ({counted}do less at once, or raise "
        f"[sandbox] {key} in .runner/state/config.toml)"
    )


def setup_failed(sandbox: SandboxConfig, inputs: tuple[str, ...], how: str) -> str:
    """The agent error of a setup run again on the agent's changed `inputs` that failed `how`
    (`exited 1; see <log>`)."""
    command = " ".join(sandbox.setup)
    return (
        f"[sandbox] setup ({command}) failed after the agent changed {', '.join(inputs)}: "
        f"{how} (make setup succeed on them, or change [sandbox] setup in "
        ".runner/state/config.toml)"
    )


def render_sandbox_table(sandbox: SandboxConfig) -> str:
    """The `[sandbox]` table; an unset setup command, and unset inputs of it, are comments."""
    setup_comment = "argv run once in each new scratch checkout"
    inputs_comment = "files setup reads: changed, setup runs again"
    return (
        "\n[sandbox]\n"
        + toml_line("mode", sandbox.mode, '"auto" | "bwrap" | "off"; see docs/sandbox.md')
        + (
            toml_line("setup", sandbox.setup, setup_comment)
            if sandbox.setup
            else example_line("setup", ("uv", "sync"), setup_comment)
        )
        + (
            toml_line("setup_inputs", sandbox.setup_inputs, inputs_comment)
            if sandbox.setup_inputs
            else example_line("setup_inputs", ("pyproject.toml", "uv.lock"), inputs_comment)
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
