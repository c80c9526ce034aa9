"""The sandbox every agent session and guard runs in: bubblewrap on Linux (docs/sandbox.md).

Decides whether a process is confined here (`[sandbox] mode` and whether bubblewrap works,
with which layers), what a confined process sees (only the listed system, one writable
checkout, the binds its caller names, a private /tmp and HOME), who it is (its own user
namespace, no capabilities, the seccomp filter, its own PID and cgroup namespaces), what it may
use (the limits), what it reaches (the network or none) and what a backend's private HOME
holds, and starts each child process (`processes`: the only place the runner spawns one,
confined when given a Confinement). The environment's allow-list itself is
runner_core.run.environment. Never decides which directory is the checkout or what is imported
from it, never decides what an agent or guard is run with, and never changes the run's
repository.

How the step runs the agent and the guard, given the run's config and a slot (its checkout
`slot.work_dir` and private homes `slot.home`, `slot.guard_home`, made by the runner; every
path absolute and resolved; a program under the host's /tmp must be bound `read_only`)::

    status = sandbox_status(config).require()   # SandboxRefused: mode "bwrap", none here
    # (`loop` and `step` already printed status.notice at their start: sandbox_at_start)
    allowed = agent_environment(os.environ, config.agent_backend, config.sandbox.env)
    env = prepare_home(slot.home, config.agent_backend, {**allowed, **runner_variables})
    agent = status.confine(
        slot.work_dir, slot.home,
        writable=(iter_dir,), read_only=(schema_path,), hide=(paths.root,), network=True,
    )                                    # None when status.mode == "off"
    run_process(argv, cwd=slot.work_dir, env=env, ..., confinement=agent)

    guard = status.confine(
        slot.work_dir, slot.guard_home, hide=(paths.root,), network=config.guard_network
    )
    guard_env = {**guard_environment(os.environ, config.guard_env), "HOME": str(slot.guard_home)}
    run_process(config.guard_command, cwd=slot.work_dir, env=guard_env, ..., confinement=guard)
"""

from runner_shell.sandbox.bwrap import Confinement, bwrap_options
from runner_shell.sandbox.home import home_files, prepare_home
from runner_shell.sandbox.status import (
    SandboxRefused,
    SandboxStatus,
    probe,
    sandbox_at_start,
    sandbox_status,
)

__all__ = [
    "Confinement",
    "SandboxRefused",
    "SandboxStatus",
    "bwrap_options",
    "home_files",
    "prepare_home",
    "probe",
    "sandbox_at_start",
    "sandbox_status",
]
