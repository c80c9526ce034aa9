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
        slot.work_dir, slot.home,        # seen inside at /checkout and /sandbox-home
        output=agent_dir, read_only=(schema_path,), hide=(paths.root,), network=True,
    )                                    # None when status.mode == "off"; agent_dir: /iteration
    run_process(argv, cwd=slot.work_dir, env=env, ..., confinement=agent)
    # The host paths of the checkout, the HOME and agent_dir in env and argv reach the process
    # as the paths it sees them at (Confinement.seen_text).

    guard = status.confine(
        slot.work_dir, slot.guard_home, hide=(paths.root,), network=config.guard_network
    )
    guard_env = {**guard_environment(os.environ, config.guard_env), "HOME": str(slot.guard_home)}
    run_process(config.guard_command, cwd=slot.work_dir, env=guard_env, ..., confinement=guard)
"""

# Each name is imported from its module when first asked for (PEP 562): `runner validate` and
# `runner status` ask only the status, and importing the confinement's modules (bwrap, the
# proxy, seccomp, cgroups) costs their start-up about what reading a 10,000-node tree does.
from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

_MODULE_OF: Mapping[str, str] = MappingProxyType(
    {
        "Confinement": "runner_shell.sandbox.bwrap",
        "bwrap_options": "runner_shell.sandbox.bwrap",
        "home_files": "runner_shell.sandbox.home",
        "prepare_home": "runner_shell.sandbox.home",
        "SandboxRefused": "runner_shell.sandbox.status",
        "SandboxStatus": "runner_shell.sandbox.status",
        "probe": "runner_shell.sandbox.status",
        "sandbox_at_start": "runner_shell.sandbox.status",
        "sandbox_status": "runner_shell.sandbox.status",
    }
)

if TYPE_CHECKING:
    from runner_shell.sandbox.bwrap import Confinement as Confinement
    from runner_shell.sandbox.bwrap import bwrap_options as bwrap_options
    from runner_shell.sandbox.home import home_files as home_files
    from runner_shell.sandbox.home import prepare_home as prepare_home
    from runner_shell.sandbox.status import SandboxRefused as SandboxRefused
    from runner_shell.sandbox.status import SandboxStatus as SandboxStatus
    from runner_shell.sandbox.status import probe as probe
    from runner_shell.sandbox.status import sandbox_at_start as sandbox_at_start
    from runner_shell.sandbox.status import sandbox_status as sandbox_status

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'runner_shell.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
