"""A worker's own rules: what a job's request may ask of this machine and what it may not.

A request brings the job's config as the loop read it. From it the worker takes only what it
cannot know: the tree and the node (the facts), the agent's and the guard's argv, the slot's
setup argv and the timeouts and output limits. The sandbox is the worker's own (`runner worker
--sandbox bwrap|auto`, its limits and allow-lists at this machine's defaults): the request's
`[sandbox]` table is dropped whole, so no request can turn it off or widen it; its hooks are
dropped (a worker runs none); its guard reaches the network only when the worker allows it.
With `--allow-command` patterns set, every argv the job would run must match one (a
shell-style pattern over the argv as `shlex.join` writes it), or the job is refused before
anything runs.
"""

from __future__ import annotations

import fnmatch
import shlex

import attrs

from runner_core.backends.registry import BACKENDS, agent_argv
from runner_core.run.config import Config, HooksConfig, SandboxConfig
from runner_core.run.sandbox_config import SandboxMode

WORKER_SANDBOX_MODES: tuple[SandboxMode, ...] = ("bwrap", "auto")


@attrs.frozen(slots=True)
class WorkerRules:
    """`runner worker`'s own: its sandbox mode, the paths its sandboxes also see, whether a
    job's guard may reach the network, and the argv patterns it runs (() for any)."""

    sandbox_mode: SandboxMode = "auto"
    allow_commands: tuple[str, ...] = ()
    guard_network: bool = False
    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.sandbox_mode not in WORKER_SANDBOX_MODES:
            raise ValueError(f"a worker's sandbox is bwrap or auto, not {self.sandbox_mode!r}")


def worker_config(config: Config, rules: WorkerRules) -> Config:
    """The config a job runs under on this worker: the request's, with the worker's sandbox,
    no hooks, and the guard's network only when both the request and the worker allow it."""
    sandbox = SandboxConfig(
        mode=rules.sandbox_mode,
        setup=config.sandbox.setup,
        writable=rules.writable,
        read_only=rules.read_only,
    )
    return attrs.evolve(
        config,
        sandbox=sandbox,
        hooks=HooksConfig(),
        guard_network=config.guard_network and rules.guard_network,
    )


def job_commands(config: Config) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each argv a job under `config` runs, by what it is."""
    known = config.agent_backend in BACKENDS
    agent = (
        agent_argv(config.agent_backend, config.agent_command) if known else config.agent_command
    )
    found = [("agent command", agent), ("guard command", config.guard_command)]
    if config.sandbox.setup:
        found.append(("setup command", config.sandbox.setup))
    return tuple(found)


def refused_command(config: Config, rules: WorkerRules) -> str | None:
    """Why this worker will not run a job under `config` (an argv no `--allow-command`
    pattern matches), or None when it will."""
    if not rules.allow_commands:
        return None
    for what, argv in job_commands(config):
        line = shlex.join(argv)
        if not any(fnmatch.fnmatchcase(line, pattern) for pattern in rules.allow_commands):
            return f"its {what} {line!r} matches no --allow-command of this worker"
    return None
