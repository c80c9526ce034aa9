"""Configuration: what `.runner/state/config.toml` may say, and its defaults.

Decides whether parsed TOML data is a valid configuration, naming the key of any problem.
Never reads the file: the shell parses TOML and hands the mapping in.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs

from runner_core.backends.registry import BACKENDS, DEFAULT_BACKEND, BackendName, FallbackBackend
from runner_core.run.agent_config import (
    RoleAgent,
    parse_agent_table,
    parse_role_tables,
    render_role_table,
)
from runner_core.run.config_errors import ConfigError as ConfigError
from runner_core.run.config_schema import check_config_schema
from runner_core.run.config_toml import example_line, toml_line
from runner_core.run.config_values import argv as _argv
from runner_core.run.config_values import env_patterns as env_patterns
from runner_core.run.executor_config import (
    LOCAL_EXECUTOR,
    ExecutorConfig,
    parse_executor,
    render_executor_table,
)
from runner_core.run.judging_config import (
    agent_iterations_line,
    parse_require_targets,
    require_targets_line,
)
from runner_core.run.notify_config import (
    NO_NOTIFY,
    NotifyConfig,
    parse_notify,
    render_notify_table,
)
from runner_core.run.sandbox_config import DEFAULT_SANDBOX, parse_sandbox, render_sandbox_table
from runner_core.run.sandbox_config import SANDBOX_LIMITS as SANDBOX_LIMITS
from runner_core.run.sandbox_config import SANDBOX_MODES as SANDBOX_MODES
from runner_core.run.sandbox_config import SandboxConfig as SandboxConfig

# The config's comment on `[agent] backend`: `"codex" | "claude" | "command"`.
_BACKEND_CHOICES = " | ".join(f'"{name}"' for name in BACKENDS)

HOOK_NAMES = (
    "on_iteration",
    "on_stuck",
    "on_complete",
    "on_limit",
    "on_budget",
    "on_error",
    "on_wait",
    "on_question",
)


# How a `done` is judged (`[guard] mode`): the values of config.schema.json's enum.
GuardMode = Literal["exit", "ratchet"]
# The mode judged by the guard's test report against the head's baseline (README).
RATCHET: GuardMode = "ratchet"

# What `runner loop` does with a stuck leaf (`[loop] on_stuck`): the schema's enum.
OnStuck = Literal["stop", "decompose"]


@attrs.frozen(slots=True)
class LoopConfig:
    """`[loop]`: how `runner loop` carries on through runner errors, limits and stuck leaves."""

    max_consecutive_runner_errors: int = 3
    runner_error_backoff_secs: tuple[int, ...] = (30, 120, 600)
    max_wait_secs: int = 21600
    on_stuck: OnStuck = "stop"
    hook_timeout_secs: int = 30
    max_agent_iterations: int | None = None  # iterations an agent answered (judging_config)


@attrs.frozen(slots=True)
class BudgetConfig:
    """`[budget]`: limits on a run's spending; None is no limit."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_wall_secs: int | None = None
    max_agent_iterations: int | None = None  # `[loop] max_agent_iterations`, set from [loop]


# No budget set: nothing limits the run's spending.
NO_BUDGET = BudgetConfig()


@attrs.frozen(slots=True)
class HooksConfig:
    """`[hooks]`: an argv per hook, run with the event's JSON on stdin; () is no hook."""

    on_iteration: tuple[str, ...] = ()
    on_stuck: tuple[str, ...] = ()
    on_complete: tuple[str, ...] = ()
    on_limit: tuple[str, ...] = ()
    on_budget: tuple[str, ...] = ()
    on_error: tuple[str, ...] = ()
    on_wait: tuple[str, ...] = ()
    on_question: tuple[str, ...] = ()

    def argv(self, hook: str) -> tuple[str, ...]:
        """The argv of the hook named `hook` (one of HOOK_NAMES)."""
        value: tuple[str, ...] = getattr(self, hook)
        return value


# An iteration's import in all, by default (`import_limit_bytes`, `import_limit_files`).
IMPORT_LIMIT_BYTES = 200_000_000
IMPORT_LIMIT_FILES = 20_000


@attrs.frozen(slots=True)
class Config:
    """The settings of `.runner/config.toml`, each field a key of it with its default; build
    one from parsed TOML with `parse_config`, which checks every value."""

    max_attempts_default: int = 3
    max_iterations: int = 100
    iteration_timeout_secs: int = 1800
    executor_output_limit_bytes: int = 100_000
    guard_output_limit_bytes: int = 100_000
    # The most one iteration imports from its scratch checkout: new or changed files' bytes
    # and their number (each file is capped apart, at 64 MiB); past either, nothing is.
    import_limit_bytes: int = IMPORT_LIMIT_BYTES
    import_limit_files: int = IMPORT_LIMIT_FILES
    guard_command: tuple[str, ...] = ("just", "ci")
    # A guard without the network passes or fails on the checkout alone, the same every time.
    guard_network: bool = False
    # How a `done` is judged: "exit" by the guard's exit code alone, "ratchet" by its test
    # report against the base commit's (see the README's "Designing guards").
    guard_mode: GuardMode = "exit"
    guard_rerun_failures: int = 1  # how often a ratchet guard is rerun to tell flaky tests
    guard_protected: tuple[str, ...] = ()  # path patterns an executor may not change
    # `[guard] env`: variables of the runner's environment a guard also gets (no key, no token
    # otherwise: runner_core.run.environment).
    guard_env: tuple[str, ...] = ()
    guard_require_targets: bool = False  # ratchet: a node naming no `test:` fails its done
    agent_backend: BackendName = DEFAULT_BACKEND
    agent_command: tuple[str, ...] = ()
    # `[agent] fallback`: the backends run in turn when the one in use hits a limit.
    agent_fallback: tuple[FallbackBackend, ...] = ()
    # `[agent.decomposer]`, `[agent.executor]`: what that role's iterations run instead.
    agent_decomposer: RoleAgent | None = None
    agent_executor: RoleAgent | None = None
    loop: LoopConfig = LoopConfig()
    budget: BudgetConfig = BudgetConfig()
    hooks: HooksConfig = HooksConfig()
    sandbox: SandboxConfig = DEFAULT_SANDBOX
    # `[parallel] slots`: how many leaves run at once (docs/parallel.md); 1 is one at a time.
    parallel_slots: int = 1
    # `[parallel] merge_sessions`: a job whose lines conflict with work merged since it
    # started goes to a short session of the agent (role `merger`) before it runs again.
    parallel_merge_sessions: bool = True
    # `[executor]`: where a parallel run's jobs run (docs/temporal.md); local by default.
    executor: ExecutorConfig = LOCAL_EXECUTOR
    # `[notify]`: Apprise URLs told when the run needs its operator (docs/notify.md).
    notify: NotifyConfig = NO_NOTIFY


MAX_RERUNS = 10
# Upper bounds: beyond them a value is a typo or an attack, never a plan (a week, a million
# dollars, ...); each is far above any real run and low enough that arithmetic stays sane.
# schemas/config.schema.json says them (and every other key's bounds); these are what the
# program itself needs to know.
MAX_VALUES = MappingProxyType(
    {
        "max_attempts_default": 1000,
        "max_iterations": 1_000_000,
        "iteration_timeout_secs": 7 * 24 * 3600,
        "executor_output_limit_bytes": 64 * 1024 * 1024,
        "guard_output_limit_bytes": 64 * 1024 * 1024,
        "import_limit_bytes": 64 * 1024**3,
        "import_limit_files": 10_000_000,
    }
)


def parse_config(data: Mapping[str, Any]) -> Config:
    """A `Config` from parsed TOML; raises `ConfigError` naming the first bad key.

    schemas/config.schema.json judges every value first; what is left here are the rules
    between keys and those a schema cannot say, then the defaults."""
    check_config_schema(data)
    defaults = Config()
    loop = parse_loop(data.get("loop", {}))
    return Config(
        **_guard_fields(data.get("guard", {}), defaults),
        **_agent_fields(data.get("agent", {}), defaults),
        loop=loop,
        budget=attrs.evolve(
            parse_budget(data.get("budget", {})), max_agent_iterations=loop.max_agent_iterations
        ),
        hooks=parse_hooks(data.get("hooks", {})),
        sandbox=parse_sandbox(data.get("sandbox", {})),
        parallel_slots=data.get("parallel", {}).get("slots", defaults.parallel_slots),
        parallel_merge_sessions=data.get("parallel", {}).get(
            "merge_sessions", defaults.parallel_merge_sessions
        ),
        executor=parse_executor(data.get("executor", {})),
        notify=parse_notify(data.get("notify", {})),
        **{key: data.get(key, getattr(defaults, key)) for key in MAX_VALUES},
    )


def _guard_fields(guard: Mapping[str, Any], defaults: Config) -> dict[str, Any]:
    """`[guard]`'s fields of a `Config`: its command, network, mode, reruns, protected paths
    and environment."""
    mode = guard.get("mode", defaults.guard_mode)
    return {
        "guard_command": _argv("guard.command", guard["command"])
        if "command" in guard
        else defaults.guard_command,
        "guard_network": guard.get("network", defaults.guard_network),
        "guard_mode": mode,
        "guard_rerun_failures": guard.get("rerun_failures", defaults.guard_rerun_failures),
        "guard_protected": _argv("guard.protected", guard.get("protected", [])),
        "guard_env": env_patterns(guard.get("env", [])),
        "guard_require_targets": parse_require_targets(guard, mode),
    }


def _agent_fields(agent: Mapping[str, Any], defaults: Config) -> dict[str, Any]:
    """`[agent]`'s fields of a `Config`: its backend, command and fallback, and its role
    tables."""
    base = parse_agent_table("agent", agent, RoleAgent(defaults.agent_backend))
    decomposer, executor = parse_role_tables(agent, base)
    return {
        "agent_backend": base.backend,
        "agent_command": base.command,
        "agent_fallback": base.fallback,
        "agent_decomposer": decomposer,
        "agent_executor": executor,
    }


def render_config(config: Config) -> str:
    """TOML text for a config, with the defaults' comments; `parse_config` reads it back."""
    counts = (
        ("max_attempts_default", "attempts a new node gets"),
        ("max_iterations", "run-level cap on next_iter"),
        ("iteration_timeout_secs", "agent + guards"),
        ("executor_output_limit_bytes", ""),
        ("guard_output_limit_bytes", ""),
        ("import_limit_bytes", "an iteration's import in all"),
        ("import_limit_files", "new or changed files it imports"),
    )
    return (
        "".join(toml_line(key, getattr(config, key), comment) for key, comment in counts)
        + _render_guard_table(config)
        + "\n[agent]\n"
        + toml_line("backend", config.agent_backend, _BACKEND_CHOICES)
        + toml_line("command", config.agent_command, 'argv for backend = "command"')
        + (toml_line("fallback", config.agent_fallback) if config.agent_fallback else "")
        + render_role_table("decomposer", config.agent_decomposer)
        + render_role_table("executor", config.agent_executor)
        + render_loop_tables(config)
        + render_sandbox_table(config.sandbox)
        + render_parallel_table(config.parallel_slots, config.parallel_merge_sessions)
        + render_executor_table(config.executor)
        + render_notify_table(config.notify)
    )


def _render_guard_table(config: Config) -> str:
    """The `[guard]` table; its `env` only when it names variables."""
    return (
        "\n[guard]\n"
        + toml_line("command", config.guard_command, "argv, no shell; exit 0 = pass")
        + toml_line(
            "network", config.guard_network, "whether the sandboxed guard may reach the network"
        )
        + toml_line(
            "mode", config.guard_mode, '"exit" | "ratchet"; see the README, Designing guards'
        )
        + toml_line(
            "rerun_failures", config.guard_rerun_failures, "ratchet: reruns that tell flaky tests"
        )
        + toml_line("protected", config.guard_protected, "paths an executor may not change")
        + (
            toml_line("env", config.guard_env, "variables the guard also gets")
            if config.guard_env
            else ""
        )
        + require_targets_line(config.guard_require_targets)
    )


def command_words(key: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """A command given on the command line: one shell-quoted string, or one word per value.

    `--guard "python -m pytest -q"` and `--guard python --guard -m ...` mean the same argv.
    """
    if len(values) != 1:
        return values
    try:
        return tuple(shlex.split(values[0]))
    except ValueError as error:
        raise ConfigError(key, f"cannot split {values[0]!r} into words: {error}") from None


# ---------------------------------------------------------------- [loop], [budget], [hooks], ...

_HOOK_EXAMPLE = ("notify-send", "runner")


def parse_loop(section: Mapping[str, Any]) -> LoopConfig:
    """`[loop]` from parsed TOML, defaults for what it leaves out."""
    defaults = LoopConfig()
    backoff = tuple(section.get("runner_error_backoff_secs", defaults.runner_error_backoff_secs))
    return attrs.evolve(defaults, **{**section, "runner_error_backoff_secs": backoff})


def parse_budget(section: Mapping[str, Any]) -> BudgetConfig:
    """`[budget]` from parsed TOML; every limit is optional."""
    cost = section.get("max_cost_usd")
    if cost is not None and not math.isfinite(cost):
        # NaN: every bound of the schema lets it through.
        raise ConfigError("budget.max_cost_usd", f"must be a number of US dollars, got {cost!r}")
    return BudgetConfig(
        max_cost_usd=None if cost is None else float(cost),
        max_tokens=section.get("max_tokens"),
        max_wall_secs=section.get("max_wall_secs"),
    )


def parse_hooks(section: Mapping[str, Any]) -> HooksConfig:
    """`[hooks]` from parsed TOML: each hook an argv of non-empty strings (no shell)."""
    argvs: dict[str, tuple[str, ...]] = {}
    for name, value in section.items():
        key = f"hooks.{name}"
        argv = _argv(key, value)
        if not all(argv):
            raise ConfigError(key, "must not contain empty strings")
        argvs[name] = argv
    return HooksConfig(**argvs)


def render_loop_tables(config: Config) -> str:
    """The `[loop]`, `[budget]` and `[hooks]` tables; an unset budget or hook is a comment."""
    loop, budget, hooks = config.loop, config.budget, config.hooks
    text = (
        "\n[loop]\n"
        + toml_line(
            "max_consecutive_runner_errors",
            loop.max_consecutive_runner_errors,
            "0 = stop at the first",
        )
        + toml_line("runner_error_backoff_secs", loop.runner_error_backoff_secs, "the last repeats")
        + toml_line("max_wait_secs", loop.max_wait_secs, "cap on one usage/rate-limit wait")
        + toml_line("on_stuck", loop.on_stuck, '"stop" | "decompose"')
        + toml_line("hook_timeout_secs", loop.hook_timeout_secs)
        + agent_iterations_line(loop.max_agent_iterations)
        + "\n[budget]  # each optional; the loop stops before an agent once one is reached\n"
    )
    for name, value, example in (
        ("max_cost_usd", budget.max_cost_usd, 20.0),
        ("max_tokens", budget.max_tokens, 5000000),
        ("max_wall_secs", budget.max_wall_secs, 28800),
    ):
        text += example_line(name, example) if value is None else toml_line(name, value)
    text += "\n[hooks]  # argv, no shell; the event's JSON on stdin\n"
    for name in HOOK_NAMES:
        argv = hooks.argv(name)
        text += toml_line(name, argv) if argv else example_line(name, _HOOK_EXAMPLE)
    return text


def render_parallel_table(slots: int, merge_sessions: bool = True) -> str:
    """The `[parallel]` table, written only when it says more than one slot or turns merge
    sessions off (on, their default, is not written)."""
    if slots == 1 and merge_sessions:
        return ""
    text = "\n[parallel]\n" + toml_line("slots", slots, "leaves run at once; see docs/parallel.md")
    if not merge_sessions:
        text += toml_line("merge_sessions", False, "conflicting jobs run again, no merger")
    return text
