"""Properties of config.toml as a document: what tomli-w writes, parse_config reads back as the
same configuration, every table and key of it at once; and any parsed TOML, however wrong,
is either a configuration or one `ConfigError` line, never a crash of a parser that trusts the
schema."""

from __future__ import annotations

import tomllib
import typing
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from runner_core.backends.registry import BACKENDS, BackendName, FallbackBackend
from runner_core.run.agent_config import RoleAgent
from runner_core.run.config import (
    HOOK_NAMES,
    MAX_VALUES,
    SANDBOX_LIMITS,
    SANDBOX_MODES,
    BudgetConfig,
    Config,
    ConfigError,
    GuardMode,
    HooksConfig,
    LoopConfig,
    parse_config,
    render_config,
)
from runner_core.run.config_schema import CONFIG_SCHEMA_FILE
from runner_core.run.executor_config import ExecutorConfig, ExecutorKind
from runner_core.run.notify_config import NOTIFY_EVENTS, NotifyConfig
from runner_core.run.sandbox_config import SandboxConfig
from runner_core.validation.schema import load_schema

# Any text TOML can hold (no surrogate) but NUL, which no argv can carry.
word = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), max_size=6)
argv = st.lists(word.filter(bool), max_size=3).map(tuple)
# Letters, digits, punctuation and symbols: printable, and no space (no address holds one).
printable = st.text(
    st.characters(whitelist_categories=["L", "N", "P", "S"]), min_size=1, max_size=8
)
env_names = st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}\*?", fullmatch=True), max_size=3)
absolute = st.lists(word.map(lambda text: "/" + text), max_size=2).map(tuple)
BACKEND_NAMES: tuple[BackendName, ...] = tuple(sorted(typing.get_args(BackendName)))
EXECUTOR_KINDS: tuple[ExecutorKind, ...] = typing.get_args(ExecutorKind)
with_program: list[FallbackBackend] = [
    name for name in typing.get_args(FallbackBackend) if BACKENDS[name].program is not None
]


@st.composite
def role_agents(draw: st.DrawFn) -> RoleAgent:
    backend = draw(st.sampled_from(BACKEND_NAMES))
    command = draw(argv.filter(bool) if BACKENDS[backend].program is None else argv)
    others = [name for name in with_program if name != backend]
    fallback = draw(st.lists(st.sampled_from(others), unique=True, max_size=2))
    return RoleAgent(backend, command, tuple(fallback))


@st.composite
def executors(draw: st.DrawFn) -> ExecutorConfig:
    kind = draw(st.sampled_from(EXECUTOR_KINDS))
    tls_pair = draw(st.booleans())
    path = printable.map(lambda text: "/" + text)
    return ExecutorConfig(
        kind=kind,
        address=draw(printable.map(lambda host: f"{host}:{7233}")),
        namespace=draw(printable),
        task_queue=draw(printable),
        remote=draw(printable if kind == "temporal" else st.just("") | printable),
        heartbeat_secs=draw(st.integers(1, 3600)),
        key_file=draw(path if kind == "temporal" else st.just("") | path),
        tls=draw(st.booleans()),
        tls_ca=draw(st.just("") | path.map(lambda text: "~" + text)),
        tls_cert=draw(path) if tls_pair else "",
        tls_key=draw(path) if tls_pair else "",
        rejudge=draw(st.booleans()),
    )


@st.composite
def configs(draw: st.DrawFn) -> Config:
    agent = draw(role_agents())
    mode = draw(st.sampled_from(typing.get_args(GuardMode)))
    loop = draw(
        st.builds(
            LoopConfig,
            runner_error_backoff_secs=st.lists(st.integers(0, 604800), min_size=1, max_size=3).map(
                tuple
            ),
            on_stuck=st.sampled_from(["stop", "decompose"]),
            max_agent_iterations=st.none() | st.integers(1, 1_000_000),
        )
    )
    budget = BudgetConfig(
        max_cost_usd=draw(st.none() | st.floats(min_value=1e-9, max_value=1e6)),
        max_tokens=draw(st.none() | st.integers(1, 10**12)),
        max_agent_iterations=loop.max_agent_iterations,
    )
    hooks = HooksConfig(**{name: draw(argv) for name in HOOK_NAMES})
    sizes = {key: draw(st.integers(low, high)) for key, (low, high) in SANDBOX_LIMITS.items()}
    setup = draw(argv)
    inputs = st.lists(st.sampled_from(["package.json", "app/uv.lock", "go.sum"]), unique=True)
    sandbox = SandboxConfig(
        mode=draw(st.sampled_from(SANDBOX_MODES)),
        setup=setup,
        setup_inputs=tuple(sorted(draw(inputs))) if setup else (),
        writable=draw(absolute),
        read_only=draw(absolute),
        env=tuple(sorted(set(draw(env_names)))),
        allow_hosts=tuple(sorted(set(draw(st.lists(st.sampled_from(["a.test:1", "b:443"])))))),
        **sizes,
    )
    notify = NotifyConfig(
        urls=tuple(draw(st.lists(printable.map(lambda rest: f"json://{rest}"), max_size=2))),
        on=tuple(name for name in NOTIFY_EVENTS if draw(st.booleans())),
        timeout_secs=draw(st.integers(1, 300)),
    )
    return Config(
        **{key: draw(st.integers(1, high)) for key, high in MAX_VALUES.items()},
        guard_command=draw(argv.filter(bool)),
        guard_network=draw(st.booleans()),
        guard_mode=mode,
        guard_rerun_failures=draw(st.integers(0, 10)),
        guard_protected=draw(argv),
        guard_env=tuple(sorted(set(draw(env_names)))),
        guard_require_targets=mode == "ratchet" and draw(st.booleans()),
        agent_backend=agent.backend,
        agent_command=agent.command,
        agent_fallback=agent.fallback,
        agent_decomposer=draw(st.none() | role_agents()),
        agent_executor=draw(st.none() | role_agents()),
        loop=loop,
        budget=budget,
        hooks=hooks,
        sandbox=sandbox,
        parallel_slots=draw(st.integers(1, 64)),
        parallel_merge_sessions=draw(st.booleans()),
        executor=draw(executors()),
        notify=notify,
    )


@given(configs())
def test_any_config_written_by_tomli_w_reads_back_unchanged(config: Config) -> None:
    """parse_config(tomllib.loads(render_config(c))) == c for a config with every table set."""
    assert parse_config(tomllib.loads(render_config(config))) == config


SCHEMA = load_schema(CONFIG_SCHEMA_FILE)
TABLES = {
    name: sorted(node.get("properties", {"backend": 0}))
    for name, node in SCHEMA["properties"].items()
    if "properties" in node or "$ref" in node
}
values = st.recursive(
    st.none().map(lambda _: "")
    | st.booleans()
    | st.integers(-(10**25), 10**25)
    | st.floats(allow_nan=True)
    | st.sampled_from(["", "/x", "~", "x", "codex", "command", "ratchet", "a:1", "\x00", "A_*"]),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


def tables(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from([*keys, "unknown"]), values, max_size=4)


near_configs = st.dictionaries(
    st.sampled_from([*MAX_VALUES, *TABLES, "unknown"]),
    values | st.deferred(lambda: tables(sorted(attrs.fields_dict(ExecutorConfig)))),
    max_size=4,
).flatmap(
    lambda data: st.fixed_dictionaries(
        {
            key: tables(TABLES[key]) if key in TABLES else st.just(value)
            for key, value in data.items()
        }
    )
)


@given(near_configs)
def test_any_parsed_toml_is_a_config_or_one_config_error_line(data: dict[str, Any]) -> None:
    """parse_config either returns a Config or raises one one-line ConfigError for any data
    shaped like parsed TOML with the schema's keys (and strangers), never anything else."""
    try:
        parse_config(data)
    except ConfigError as error:
        assert "\n" not in str(error)
        assert error.key
