"""The registry of backends is the one list of names the core knows, and everything that lists,
validates or defaults a backend reads it."""

from __future__ import annotations

import re

import pytest

from runner_core.backends.registry import BACKENDS, DEFAULT_BACKEND, agent_argv, backend_names
from runner_core.run.config import Config, ConfigError, parse_config, render_config
from runner_core.run.template_agent import TEMPLATE_AGENT_COMMAND, init_agent_command
from tests.helpers import ROOT


def test_each_entry_is_filed_under_its_own_name() -> None:
    assert all(name == info.name for name, info in BACKENDS.items())


def test_the_default_backend_is_registered_and_is_the_config_default() -> None:
    assert DEFAULT_BACKEND in BACKENDS
    assert Config().agent_backend == DEFAULT_BACKEND
    assert parse_config({}).agent_backend == DEFAULT_BACKEND


def test_the_names_are_listed_sorted_for_messages() -> None:
    assert backend_names() == "claude, codex, command, copilot, gemini, opencode, qwen"


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_config_accepts_every_registered_backend(name: str) -> None:
    data = {"agent": {"backend": name, "command": ["agent"]}}
    assert parse_config(data).agent_backend == name


@pytest.mark.parametrize("backend", ["gpt", ["codex"], 3])
def test_config_rejects_an_unregistered_backend_naming_every_registered_one(
    backend: object,
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"agent": {"backend": backend}})
    assert str(raised.value) == (
        "agent.backend: must be one of claude, codex, command, copilot, gemini, opencode, qwen, "
        f"got {backend!r}"
    )


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_without_a_program_needs_a_command_and_one_with_a_program_does_not(
    name: str,
) -> None:
    program = BACKENDS[name].program
    if program is None:
        with pytest.raises(ConfigError, match=f'when backend = "{name}"'):
            parse_config({"agent": {"backend": name}})
        assert init_agent_command(name, ()) == (TEMPLATE_AGENT_COMMAND, True)
    else:
        assert parse_config({"agent": {"backend": name}}).agent_command == ()
        assert agent_argv(name, ()) == (program,)
        assert init_agent_command(name, ()) == ((), False)


def test_a_command_replaces_the_backends_program() -> None:
    assert agent_argv("codex", ("/opt/codex", "--profile", "ci")) == (
        "/opt/codex",
        "--profile",
        "ci",
    )


def test_the_rendered_config_and_the_readme_list_the_registered_backends_in_order() -> None:
    choices = " | ".join(f'"{name}"' for name in BACKENDS)
    assert choices == '"codex" | "claude" | "gemini" | "qwen" | "opencode" | "copilot" | "command"'
    assert f'backend = "codex"  # {choices}\n' in render_config(Config())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf'^backend = "codex" +# {re.escape(choices)}$', readme, re.MULTILINE)
