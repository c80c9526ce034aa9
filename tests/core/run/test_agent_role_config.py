"""`[agent.decomposer]` and `[agent.executor]`: each role may run its own backend, argv and
fallback chain; what a role table leaves out is `[agent]`'s, except a command and fallback that
belong to another backend."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from runner_core.run.agent_config import RoleAgent
from runner_core.run.config import ConfigError, parse_config, render_config
from runner_core.run.role_agents import iteration_config, role_config


def test_each_role_runs_its_own_backend_command_and_fallback() -> None:
    config = parse_config(
        {
            "agent": {
                "backend": "codex",
                "fallback": ["claude"],
                "decomposer": {"backend": "claude", "fallback": ["gemini"]},
                "executor": {"backend": "command", "command": ["python3", "agent.py"]},
            }
        }
    )
    assert config.agent_decomposer == RoleAgent("claude", (), ("gemini",))
    assert config.agent_executor == RoleAgent("command", ("python3", "agent.py"), ())
    decomposer = role_config(config, "decomposer")
    assert (decomposer.agent_backend, decomposer.agent_fallback) == ("claude", ("gemini",))
    executor = role_config(config, "executor")
    assert executor.agent_backend == "command"
    assert executor.agent_command == ("python3", "agent.py")
    assert executor.agent_fallback == ()


def test_a_role_without_a_table_runs_the_agent_table() -> None:
    config = parse_config({"agent": {"backend": "codex", "fallback": ["claude"]}})
    assert config.agent_decomposer is None and config.agent_executor is None
    assert role_config(config, "decomposer") == config
    assert role_config(config, "executor") == config


def test_a_role_on_the_same_backend_keeps_the_agent_tables_command_and_fallback() -> None:
    config = parse_config(
        {
            "agent": {
                "backend": "codex",
                "command": ["codex", "-m", "o3"],
                "fallback": ["claude"],
                "executor": {"command": ["codex", "-m", "o4-mini"]},
                "decomposer": {"backend": "gemini"},
            }
        }
    )
    assert config.agent_executor == RoleAgent("codex", ("codex", "-m", "o4-mini"), ("claude",))
    # Another backend: codex's argv and chain are not its own.
    assert config.agent_decomposer == RoleAgent("gemini", (), ())


def test_a_fallback_backend_runs_its_own_program_for_the_roles_iteration() -> None:
    config = parse_config(
        {"agent": {"executor": {"backend": "codex", "command": ["codex", "-m", "x"]}}}
    )
    chosen = iteration_config(config, "executor", "claude")
    assert (chosen.agent_backend, chosen.agent_command) == ("claude", ())
    own = iteration_config(config, "executor", "codex")
    assert own.agent_command == ("codex", "-m", "x")


@pytest.mark.parametrize(
    ("table", "key", "message"),
    [
        ({"decomposer": "claude"}, "agent.decomposer", "must be a table"),
        ({"executor": {"model": "o3"}}, "agent.executor.model", "unknown key"),
        (
            {"executor": {"backend": "gpt"}},
            "agent.executor.backend",
            "must be one of claude, codex, command, copilot, gemini, opencode, qwen, got 'gpt'",
        ),
        (
            {"decomposer": {"backend": "command"}},
            "agent.decomposer.command",
            'must name the agent program when backend = "command"',
        ),
        (
            {"executor": {"backend": "claude", "fallback": ["claude"]}},
            "agent.executor.fallback",
            "names a backend twice or names agent.executor.backend: ['claude']",
        ),
        (
            {"executor": {"command": "codex -m o3"}},
            "agent.executor.command",
            "must be an array of strings",
        ),
    ],
)
def test_a_bad_role_table_is_an_error_naming_its_key(
    table: dict[str, object], key: str, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"agent": {"backend": "codex", **table}})
    assert str(raised.value).startswith(f"{key}: {message}"), str(raised.value)


def test_role_tables_and_the_fallback_are_written_and_read_back() -> None:
    config = parse_config(
        {
            "agent": {
                "backend": "codex",
                "fallback": ["claude"],
                "decomposer": {"backend": "claude"},
                "executor": {"backend": "command", "command": ["./agent", "--fast"]},
            }
        }
    )
    text = render_config(config)
    assert "[agent.decomposer]" in text and "[agent.executor]" in text
    assert parse_config(tomllib.loads(text)) == config
    assert "[agent." not in render_config(parse_config({}))


def test_the_readmes_role_table_example_is_a_valid_config() -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, flags=re.DOTALL)
    example = next(block for block in blocks if "[agent.executor]" in block)
    config = parse_config(tomllib.loads(example))
    assert config.agent_executor is not None
    assert config.agent_executor.backend != config.agent_backend
