"""Configuration: what `.runner/state/config.toml` may say, and its defaults.

Decides whether parsed TOML data is a valid configuration, naming the key of any problem.
Never reads the file: the shell parses TOML and hands the mapping in.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.backends.registry import BACKENDS, DEFAULT_BACKEND
from runner_core.run.agent_config import (
    AGENT_KEYS,
    ROLE_TABLES,
    RoleAgent,
    parse_agent_table,
    parse_role_tables,
    render_role_table,
)
from runner_core.run.config_errors import ConfigError as ConfigError
from runner_core.run.config_errors import known_keys
from runner_core.run.config_schema import check_config_schema
from runner_core.run.config_values import argv as _argv
from runner_core.run.config_values import bounded_int as _bounded_int
from runner_core.run.config_values import env_patterns as env_patterns
from runner_core.run.executor_config import (
    LOCAL_EXECUTOR,
    ExecutorConfig,
    parse_executor,
    render_executor_table,
)
from runner_core.run.judging_config import (
    agent_iterations_line,
    parse_agent_iterations,
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

ON_STUCK_POLICIES = ("stop", "decompose")
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


@attrs.frozen(slots=True)
class LoopConfig:
    """`[loop]`: how `runner loop` carries on through runner errors, limits and stuck leaves."""

    max_consecutive_runner_errors: int = 3
    runner_error_backoff_secs: tuple[int, ...] = (30, 120, 600)
    max_wait_secs: int = 21600
    on_stuck: str = "stop"
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
    guard_mode: str = "exit"
    guard_rerun_failures: int = 1  # how often a ratchet guard is rerun to tell flaky tests
    guard_protected: tuple[str, ...] = ()  # path patterns an executor may not change
    # `[guard] env`: variables of the runner's environment a guard also gets (no key, no token
    # otherwise: runner_core.run.environment).
    guard_env: tuple[str, ...] = ()
    guard_require_targets: bool = False  # ratchet: a node naming no `test:` fails its done
    agent_backend: str = DEFAULT_BACKEND
    agent_command: tuple[str, ...] = ()
    # `[agent] fallback`: the backends run in turn when the one in use hits a limit.
    agent_fallback: tuple[str, ...] = ()
    # `[agent.decomposer]`, `[agent.executor]`: what that role's iterations run instead.
    agent_decomposer: RoleAgent | None = None
    agent_executor: RoleAgent | None = None
    loop: LoopConfig = LoopConfig()
    budget: BudgetConfig = BudgetConfig()
    hooks: HooksConfig = HooksConfig()
    sandbox: SandboxConfig = DEFAULT_SANDBOX
    # `[parallel] slots`: how many leaves run at once (docs/parallel.md); 1 is one at a time.
    parallel_slots: int = 1
    # `[executor]`: where a parallel run's jobs run (docs/temporal.md); local by default.
    executor: ExecutorConfig = LOCAL_EXECUTOR
    # `[notify]`: Apprise URLs told when the run needs its operator (docs/notify.md).
    notify: NotifyConfig = NO_NOTIFY


TABLE_KEYS = MappingProxyType(
    {
        "guard": (
            "command",
            "network",
            "mode",
            "rerun_failures",
            "protected",
            "env",
            "require_targets",
        ),
        "agent": (*AGENT_KEYS, *ROLE_TABLES),
    }
)
GUARD_MODES = ("exit", "ratchet")
MAX_RERUNS = 10
# Upper bounds: beyond them a value is a typo or an attack, never a plan (a week, a million
# dollars, ...); each is far above any real run and low enough that arithmetic stays sane.
_WEEK_SECS = 7 * 24 * 3600
# The top-level counts, each > 0 and at most its bound.
MAX_VALUES = MappingProxyType(
    {
        "max_attempts_default": 1000,
        "max_iterations": 1_000_000,
        "iteration_timeout_secs": _WEEK_SECS,
        "executor_output_limit_bytes": 64 * 1024 * 1024,
        "guard_output_limit_bytes": 64 * 1024 * 1024,
        "import_limit_bytes": 64 * 1024**3,
        "import_limit_files": 10_000_000,
    }
)


def parse_config(data: Mapping[str, Any]) -> Config:
    """A `Config` from parsed TOML; raises `ConfigError` naming the first bad key."""
    check_config_schema(data)
    for key in sorted(data):
        if key not in MAX_VALUES and key not in TABLE_KEYS and key not in _OTHERTABLE_KEYS:
            raise ConfigError(key, "unknown key")
    for table, keys in sorted(TABLE_KEYS.items()):
        section = data.get(table, {})
        if not isinstance(section, dict):
            raise ConfigError(table, "must be a table")
        for key in sorted(section):
            if key not in keys:
                raise ConfigError(f"{table}.{key}", "unknown key")
    defaults = Config()
    numbers: dict[str, Any] = {
        key: _bounded_int(key, data[key], 1, high, each_bound=True)
        if key in data
        else getattr(defaults, key)
        for key, high in MAX_VALUES.items()
    }
    return Config(
        **_guard_fields(data.get("guard", {}), defaults),
        **_agent_fields(data.get("agent", {}), defaults),
        loop=(loop := parse_loop(_table(data, "loop"))),
        budget=attrs.evolve(
            parse_budget(_table(data, "budget")), max_agent_iterations=loop.max_agent_iterations
        ),
        hooks=parse_hooks(_table(data, "hooks")),
        sandbox=parse_sandbox(_table(data, "sandbox")),
        parallel_slots=parse_parallel(_table(data, "parallel")),
        executor=parse_executor(_table(data, "executor")),
        notify=parse_notify(_table(data, "notify")),
        **numbers,
    )


def _guard_fields(guard: Mapping[str, Any], defaults: Config) -> dict[str, Any]:
    """`[guard]`'s fields of a `Config`: its command, network, mode, reruns, protected paths
    and environment."""
    guard_command = (
        _argv("guard.command", guard["command"], allow_empty=False)
        if "command" in guard
        else defaults.guard_command
    )
    guard_network = guard.get("network", defaults.guard_network)
    if not isinstance(guard_network, bool):
        raise ConfigError("guard.network", f"must be true or false, got {guard_network!r}")
    guard_mode = guard.get("mode", defaults.guard_mode)
    if guard_mode not in GUARD_MODES:
        choices = " | ".join(f'"{choice}"' for choice in GUARD_MODES)
        raise ConfigError("guard.mode", f"must be {choices}, got {guard_mode!r}")
    reruns = guard.get("rerun_failures", defaults.guard_rerun_failures)
    guard_rerun_failures = _bounded_int("guard.rerun_failures", reruns, 0, MAX_RERUNS)
    protected = _argv("guard.protected", guard.get("protected", []), allow_empty=True)
    guard_env = env_patterns("guard.env", guard.get("env", []))
    return {
        "guard_command": guard_command,
        "guard_network": guard_network,
        "guard_mode": guard_mode,
        "guard_rerun_failures": guard_rerun_failures,
        "guard_protected": protected,
        "guard_env": guard_env,
        "guard_require_targets": parse_require_targets(guard, guard_mode),
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

    def toml_list(values: tuple[str, ...]) -> str:
        # A JSON string without ensure_ascii is a valid TOML basic string, except that TOML
        # also forbids a raw DEL.
        return (
            "["
            + ", ".join(
                json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f") for value in values
            )
            + "]"
        )

    return (
        f"max_attempts_default = {config.max_attempts_default}  # attempts a new node gets\n"
        f"max_iterations = {config.max_iterations}  # run-level cap on next_iter\n"
        f"iteration_timeout_secs = {config.iteration_timeout_secs}  # agent + guards\n"
        f"executor_output_limit_bytes = {config.executor_output_limit_bytes}\n"
        f"guard_output_limit_bytes = {config.guard_output_limit_bytes}\n"
        f"import_limit_bytes = {config.import_limit_bytes}  # an iteration's import in all\n"
        f"import_limit_files = {config.import_limit_files}  # new or changed files it imports\n"
        "\n"
        "[guard]\n"
        f"command = {toml_list(config.guard_command)}  # argv, no shell; exit 0 = pass\n"
        f"network = {'true' if config.guard_network else 'false'}"
        "  # whether the sandboxed guard may reach the network\n"
        f'mode = "{config.guard_mode}"  # "exit" | "ratchet"; see the README, Designing guards\n'
        f"rerun_failures = {config.guard_rerun_failures}  # ratchet: reruns that tell flaky tests\n"
        f"protected = {toml_list(config.guard_protected)}  # paths an executor may not change\n"
        + (
            f"env = {toml_list(config.guard_env)}  # variables the guard also gets\n"
            if config.guard_env
            else ""
        )
        + require_targets_line(config.guard_require_targets)
        + "\n"
        "[agent]\n"
        f'backend = "{config.agent_backend}"  # {_BACKEND_CHOICES}\n'
        f'command = {toml_list(config.agent_command)}  # argv for backend = "command"\n'
        + (f"fallback = {toml_list(config.agent_fallback)}\n" if config.agent_fallback else "")
        + render_role_table("decomposer", config.agent_decomposer, toml_list)
        + render_role_table("executor", config.agent_executor, toml_list)
        + render_loop_tables(config, toml_list)
        + render_sandbox_table(config.sandbox, toml_list)
        + render_parallel_table(config.parallel_slots)
        + render_executor_table(config.executor)
        + render_notify_table(config.notify)
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

_OTHERTABLE_KEYS = ("loop", "budget", "hooks", "sandbox", "parallel", "executor", "notify")
MAX_SLOTS = 64
_HOOK_EXAMPLE = '["notify-send", "runner"]'
_MAX_RUNNER_ERRORS = 1000
_MAX_BACKOFF_STEPS = 100
_MAX_COST_USD = 1_000_000.0
_MAX_TOKENS = 10**12
_MAX_WALL_SECS = 10 * 365 * 24 * 3600
_MAX_HOOK_TIMEOUT_SECS = 3600


def _table(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = data.get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(name, "must be a table")
    return section


def _backoff(key: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(key, f"must be a non-empty array of seconds, got {value!r}")
    if len(value) > _MAX_BACKOFF_STEPS:
        raise ConfigError(key, f"must have at most {_MAX_BACKOFF_STEPS} steps, got {len(value)}")
    return tuple(
        _bounded_int(f"{key}[{index}]", secs, 0, _WEEK_SECS) for index, secs in enumerate(value)
    )


def parse_loop(section: Mapping[str, Any]) -> LoopConfig:
    """`[loop]` from parsed TOML, defaults for what it leaves out."""
    defaults = LoopConfig()
    known_keys("loop", section, tuple(attrs.fields_dict(LoopConfig)))
    on_stuck = section.get("on_stuck", defaults.on_stuck)
    if on_stuck not in ON_STUCK_POLICIES:
        raise ConfigError("loop.on_stuck", f'must be "stop" or "decompose", got {on_stuck!r}')
    return LoopConfig(
        max_consecutive_runner_errors=_bounded_int(
            "loop.max_consecutive_runner_errors",
            section.get("max_consecutive_runner_errors", defaults.max_consecutive_runner_errors),
            0,
            _MAX_RUNNER_ERRORS,
        ),
        runner_error_backoff_secs=_backoff(
            "loop.runner_error_backoff_secs",
            section.get("runner_error_backoff_secs", list(defaults.runner_error_backoff_secs)),
        ),
        max_wait_secs=_bounded_int(
            "loop.max_wait_secs",
            section.get("max_wait_secs", defaults.max_wait_secs),
            1,
            _WEEK_SECS,
        ),
        on_stuck=on_stuck,
        hook_timeout_secs=_bounded_int(
            "loop.hook_timeout_secs",
            section.get("hook_timeout_secs", defaults.hook_timeout_secs),
            1,
            _MAX_HOOK_TIMEOUT_SECS,
        ),
        max_agent_iterations=parse_agent_iterations(section, _bounded_int),
    )


def _cost(key: str, value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ConfigError(key, f"must be a number of US dollars, got {value!r}")
    if not 0 < value <= _MAX_COST_USD:
        raise ConfigError(key, f"must be > 0 and at most {_MAX_COST_USD:.0f}, got {value}")
    return float(value)


def parse_budget(section: Mapping[str, Any]) -> BudgetConfig:
    """`[budget]` from parsed TOML; every limit is optional and > 0."""
    known_keys("budget", section, ("max_cost_usd", "max_tokens", "max_wall_secs"))
    cost = section.get("max_cost_usd")
    tokens = section.get("max_tokens")
    wall = section.get("max_wall_secs")
    return BudgetConfig(
        max_cost_usd=None if cost is None else _cost("budget.max_cost_usd", cost),
        max_tokens=None
        if tokens is None
        else _bounded_int("budget.max_tokens", tokens, 1, _MAX_TOKENS),
        max_wall_secs=None
        if wall is None
        else _bounded_int("budget.max_wall_secs", wall, 1, _MAX_WALL_SECS),
    )


def parse_hooks(section: Mapping[str, Any]) -> HooksConfig:
    """`[hooks]` from parsed TOML: each hook an argv of non-empty strings (no shell)."""
    known_keys("hooks", section, HOOK_NAMES)
    argvs: dict[str, tuple[str, ...]] = {}
    for name in HOOK_NAMES:
        if name in section:
            key = f"hooks.{name}"
            argv = _argv(key, section[name], allow_empty=False)
            if not all(argv):
                raise ConfigError(key, "must not contain empty strings")
            argvs[name] = argv
    return HooksConfig(**argvs)


def render_loop_tables(config: Config, toml_list: Callable[[tuple[str, ...]], str]) -> str:
    """The `[loop]`, `[budget]` and `[hooks]` tables; an unset budget or hook is a comment."""
    loop, budget, hooks = config.loop, config.budget, config.hooks
    backoff = ", ".join(str(secs) for secs in loop.runner_error_backoff_secs)
    lines = [
        "",
        "[loop]",
        f"max_consecutive_runner_errors = {loop.max_consecutive_runner_errors}"
        "  # 0 = stop at the first",
        f"runner_error_backoff_secs = [{backoff}]  # the last repeats",
        f"max_wait_secs = {loop.max_wait_secs}  # cap on one usage/rate-limit wait",
        f'on_stuck = "{loop.on_stuck}"  # "stop" | "decompose"',
        f"hook_timeout_secs = {loop.hook_timeout_secs}",
        agent_iterations_line(loop.max_agent_iterations),
        "",
        "[budget]  # each optional; the loop stops before an agent once one is reached",
    ]
    for name, value, example in (
        ("max_cost_usd", budget.max_cost_usd, "20.0"),
        ("max_tokens", budget.max_tokens, "5000000"),
        ("max_wall_secs", budget.max_wall_secs, "28800"),
    ):
        lines.append(f"# {name} = {example}" if value is None else f"{name} = {value!r}")
    lines += ["", "[hooks]  # argv, no shell; the event's JSON on stdin"]
    for name in HOOK_NAMES:
        argv = hooks.argv(name)
        lines.append(f"{name} = {toml_list(argv)}" if argv else f"# {name} = {_HOOK_EXAMPLE}")
    return "\n".join(lines) + "\n"


def parse_parallel(section: Mapping[str, Any]) -> int:
    """`[parallel] slots` from parsed TOML: how many leaves run at once, 1 to MAX_SLOTS."""
    known_keys("parallel", section, ("slots",))
    return _bounded_int("parallel.slots", section.get("slots", 1), 1, MAX_SLOTS)


def render_parallel_table(slots: int) -> str:
    """The `[parallel]` table, written only when it says more than one slot."""
    if slots == 1:
        return ""
    return f"\n[parallel]\nslots = {slots}  # leaves run at once; see docs/parallel.md\n"
