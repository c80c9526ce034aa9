"""Specification of the environment's allow-list and the sandbox's limits (docs/sandbox.md).

Every process gets PATH, the locale, TERM, TZ, HOME and RUNNER_*; an agent also gets its
backend's own variables and what `[sandbox] env` names (a name, or `PREFIX_*`); a guard only
what `[guard] env` names. `[sandbox] memory_mb`, `pids_max`, `disk_mb`, `tmp_mb` have safe
defaults and bounds; a bad value is an error naming the key; `render_config` writes what is
not the default so `parse_config` reads it back.
"""

from __future__ import annotations

import tomllib

import pytest

from runner_core import ConfigError, parse_config
from runner_core.backends.registry import BACKENDS
from runner_core.run.config import SandboxConfig, render_config
from runner_core.run.environment import agent_environment, allowed, guard_environment

HOST = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "TZ": "UTC",
    "RUNNER_ITER": "3",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "GITHUB_TOKEN": "ghp",
    "SSH_AUTH_SOCK": "/run/user/0/agent",
    "OPENAI_API_KEY": "sk-o",
    "OPENAI_BASE_URL": "http://127.0.0.1:9",
    "CODEX_HOME": "/home/me/.codex",
    "ANTHROPIC_API_KEY": "sk-a",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:8",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "MY_PROVIDER_KEY": "mine",
}
BASE = {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "RUNNER_ITER"}


def test_a_guard_gets_the_base_and_no_key_or_token() -> None:
    assert set(guard_environment(HOST, ())) == BASE


def test_a_guard_gets_what_guard_env_names() -> None:
    assert set(guard_environment(HOST, ("AWS_*",))) == BASE | {"AWS_SECRET_ACCESS_KEY"}


@pytest.mark.parametrize(
    ("backend", "own"),
    [
        ("codex", {"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"}),
        ("claude", {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK"}),
        ("command", set()),
    ],
)
def test_an_agent_gets_its_backends_own_variables_and_no_other(backend: str, own: set[str]) -> None:
    assert set(agent_environment(HOST, backend, ())) == BASE | own


def test_an_agent_gets_what_sandbox_env_names() -> None:
    env = agent_environment(HOST, "codex", ("MY_PROVIDER_KEY",))

    assert env["MY_PROVIDER_KEY"] == "mine"
    assert "GITHUB_TOKEN" not in env


@pytest.mark.parametrize("extra", [(), ("RUNNER_RUN",), ("RUNNER_*",)])
def test_the_operators_run_selector_reaches_no_agent_and_no_guard(extra: tuple[str, ...]) -> None:
    # RUNNER_RUN picks the run a `runner` command works on: the operator's, not the agent's.
    host = {**HOST, "RUNNER_RUN": "run-a", "RUNNER_RUN_ID": "run-a"}

    for env in (agent_environment(host, "codex", extra), guard_environment(host, extra)):
        assert "RUNNER_RUN" not in env
        assert env["RUNNER_RUN_ID"] == "run-a" and env["RUNNER_ITER"] == "3"


def test_a_pattern_is_a_prefix_and_a_name_is_exact() -> None:
    assert allowed("AWS_REGION", ("AWS_*",))
    assert not allowed("AWS", ("AWS_*",))
    assert allowed("TOKEN", ("TOKEN",))
    assert not allowed("TOKEN2", ("TOKEN",))


def test_every_backend_names_its_variables_as_names_or_prefixes() -> None:
    for info in BACKENDS.values():
        for pattern in info.env:
            assert pattern.rstrip("*").replace("_", "").isalnum(), pattern


def test_the_defaults_are_safe_limits() -> None:
    sandbox = parse_config({}).sandbox

    assert (sandbox.memory_mb, sandbox.pids_max, sandbox.disk_mb, sandbox.tmp_mb) == (
        8192,
        2048,
        4096,
        1024,
    )
    assert sandbox.env == ()
    assert parse_config({}).guard_env == ()


def test_env_names_and_limits_are_read_and_written_back() -> None:
    data = {
        "sandbox": {"env": ["MY_KEY", "AWS_*"], "memory_mb": 512, "pids_max": 64, "tmp_mb": 16},
        "guard": {"env": ["CI"]},
    }
    config = parse_config(data)

    assert config.sandbox == SandboxConfig(
        env=("AWS_*", "MY_KEY"), memory_mb=512, pids_max=64, tmp_mb=16
    )
    assert config.guard_env == ("CI",)
    assert parse_config(tomllib.loads(render_config(config))) == config


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"sandbox": {"env": ["BAD-NAME"]}}, "sandbox.env"),
        ({"sandbox": {"env": "MY_KEY"}}, "sandbox.env"),
        ({"sandbox": {"env": ["*"]}}, "sandbox.env"),
        ({"guard": {"env": ["A*B"]}}, "guard.env"),
        ({"sandbox": {"memory_mb": 1}}, "sandbox.memory_mb"),
        ({"sandbox": {"pids_max": 0}}, "sandbox.pids_max"),
        ({"sandbox": {"tmp_mb": "big"}}, "sandbox.tmp_mb"),
        ({"sandbox": {"disk_mb": -5}}, "sandbox.disk_mb"),
    ],
)
def test_a_bad_value_names_its_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)

    assert key in str(raised.value)
