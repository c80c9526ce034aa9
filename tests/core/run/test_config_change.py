"""`runner config set|unset`: how a typed value reads, what the config becomes, and which
changes `runner audit` accepts of a config commit (only the named key)."""

from __future__ import annotations

import tomllib

import pytest

from runner_core.run.config import Config, ConfigError, parse_config, render_config
from runner_core.run.config_change import (
    config_commit_message,
    config_document,
    config_keys,
    only_key_changed,
    typed_value,
    with_setting,
    without_setting,
)
from runner_core.run.trailers import parse_trailers

DEFAULT = tomllib.loads(render_config(Config()))


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("max_iterations", "200", 200),
        ("budget.max_cost_usd", "2.5", 2.5),
        ("guard.command", "python -m pytest -q", ["python", "-m", "pytest", "-q"]),
        ("guard.command", '["just", "ci"]', ["just", "ci"]),
        ("hooks.on_stuck", "notify-send 'runner stuck'", ["notify-send", "runner stuck"]),
        ("agent.backend", "command", "command"),
        ("loop.on_stuck", '"decompose"', "decompose"),
    ],
)
def test_a_value_reads_as_toml_else_as_words(key: str, text: str, value: object) -> None:
    assert typed_value(key, text) == value


def test_set_validates_the_whole_config_with_the_config_parser() -> None:
    _, config = with_setting(DEFAULT, "budget.max_cost_usd", 5)
    assert config.budget.max_cost_usd == 5.0
    with pytest.raises(ConfigError, match=r"^max_iterations: must be > 0, got 0$"):
        with_setting(DEFAULT, "max_iterations", 0)
    with pytest.raises(ConfigError, match=r"^agent.command: must name the agent program"):
        with_setting({}, "agent.backend", "command")


def test_a_value_nested_past_the_toml_readers_depth_is_refused_naming_its_key() -> None:
    with pytest.raises(ConfigError, match=r"^guard.command: the value nests deeper than TOML"):
        typed_value("guard.command", "[" * 3_000 + "]" * 3_000)


def test_an_unknown_key_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"^budget.max_dollars: unknown key"):
        typed_value("budget.max_dollars", "3")
    with pytest.raises(ConfigError, match=r"^guard: unknown key"):
        without_setting(DEFAULT, "guard")


def test_unset_brings_the_default_back_and_leaves_the_input_alone() -> None:
    data, _ = with_setting(DEFAULT, "max_iterations", 7)
    before = dict(data)
    _, config = without_setting(data, "max_iterations")
    assert config.max_iterations == Config().max_iterations
    assert data == before


def test_every_key_of_the_rendered_default_is_a_config_key() -> None:
    rendered = config_document(Config())
    flat = {
        f"{table}.{key}" if isinstance(values, dict) else table
        for table, values in rendered.items()
        for key in (values if isinstance(values, dict) else [None])
    }
    assert flat <= set(config_keys())
    assert parse_config(rendered) == Config()


def test_every_key_of_the_config_schema_may_be_set_including_the_notify_table() -> None:
    assert {"notify.urls", "notify.on", "notify.timeout_secs", "parallel.slots"} <= set(
        config_keys()
    )
    _, config = with_setting(DEFAULT, "notify.timeout_secs", 60)
    assert config.notify.timeout_secs == 60


def test_audit_accepts_a_change_of_the_named_key_only() -> None:
    after, _ = with_setting(DEFAULT, "hooks.on_stuck", ["notify-send", "x"])
    assert only_key_changed(DEFAULT, after, "hooks.on_stuck")
    sneaky, _ = with_setting(after, "max_iterations", 5)
    assert not only_key_changed(DEFAULT, sneaky, "hooks.on_stuck")
    unset, _ = without_setting(after, "hooks.on_stuck")
    assert only_key_changed(after, unset, "hooks.on_stuck")
    assert not only_key_changed(DEFAULT, {"max_iterations": -1}, "max_iterations")


def test_the_commit_names_run_key_and_actor() -> None:
    message = config_commit_message("run-1", "set", "guard.command", "ann <a@x>")
    assert message.splitlines()[0] == "chore(runner): config set guard.command run run-1"
    assert dict(parse_trailers(message)) == {
        "Runner-Run": "run-1",
        "Runner-Config": "guard.command",
        "Runner-Actor": "ann <a@x>",
    }


@pytest.mark.parametrize(
    ("text", "argv"), [("true", ["true"]), ("5", ["5"]), ("false -x", ["false", "-x"])]
)
def test_a_command_key_reads_a_bare_word_as_a_program_not_a_toml_value(
    text: str, argv: list[str]
) -> None:
    """`runner config set guard.command true` means the program `true`, not a boolean."""
    assert typed_value("guard.command", text) == argv
    assert typed_value("agent.command", text) == argv
