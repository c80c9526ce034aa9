"""The `[loop]`, `[budget]` and `[hooks]` tables of config.toml: defaults, errors, rendering."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from runner_core.run.config import (
    HOOK_NAMES,
    BudgetConfig,
    Config,
    ConfigError,
    HooksConfig,
    LoopConfig,
    parse_config,
    render_config,
)


def test_the_loop_tables_default_to_three_errors_a_backoff_a_six_hour_cap_and_no_budget() -> None:
    config = parse_config({})
    assert config.loop == LoopConfig(
        max_consecutive_runner_errors=3,
        runner_error_backoff_secs=(30, 120, 600),
        max_wait_secs=21600,
        on_stuck="stop",
        hook_timeout_secs=30,
    )
    assert config.budget == BudgetConfig(None, None, None)
    assert all(config.hooks.argv(name) == () for name in HOOK_NAMES)


def test_every_loop_budget_and_hook_key_may_be_set() -> None:
    config = parse_config(
        {
            "loop": {
                "max_consecutive_runner_errors": 0,
                "runner_error_backoff_secs": [0, 5],
                "max_wait_secs": 60,
                "on_stuck": "decompose",
                "hook_timeout_secs": 2,
            },
            "budget": {"max_cost_usd": 5, "max_tokens": 1000, "max_wall_secs": 3600},
            "hooks": {name: ["notify", name] for name in HOOK_NAMES},
        }
    )
    assert config.loop == LoopConfig(0, (0, 5), 60, "decompose", 2)
    assert config.budget == BudgetConfig(5.0, 1000, 3600)
    assert config.hooks == HooksConfig(**{name: ("notify", name) for name in HOOK_NAMES})


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({"loop": []}, "loop", "must be a table"),
        ({"budget": 5}, "budget", "must be a table"),
        ({"hooks": "x"}, "hooks", "must be a table"),
        ({"loop": {"retries": 3}}, "loop.retries", "unknown key"),
        ({"budget": {"max_dollars": 3}}, "budget.max_dollars", "unknown key"),
        ({"hooks": {"on_done": ["x"]}}, "hooks.on_done", "unknown key"),
        (
            {"loop": {"max_consecutive_runner_errors": -1}},
            "loop.max_consecutive_runner_errors",
            "must be between 0 and 1000, got -1",
        ),
        (
            {"loop": {"max_consecutive_runner_errors": True}},
            "loop.max_consecutive_runner_errors",
            "must be an integer, got True",
        ),
        (
            {"loop": {"runner_error_backoff_secs": []}},
            "loop.runner_error_backoff_secs",
            "must be a non-empty array of seconds, got []",
        ),
        (
            {"loop": {"runner_error_backoff_secs": 30}},
            "loop.runner_error_backoff_secs",
            "must be a non-empty array of seconds, got 30",
        ),
        (
            {"loop": {"runner_error_backoff_secs": [30, "x"]}},
            "loop.runner_error_backoff_secs[1]",
            "must be an integer, got 'x'",
        ),
        (
            {"loop": {"runner_error_backoff_secs": [30, 700000]}},
            "loop.runner_error_backoff_secs[1]",
            "must be between 0 and 604800, got 700000",
        ),
        (
            {"loop": {"runner_error_backoff_secs": [1] * 101}},
            "loop.runner_error_backoff_secs",
            "must have at most 100 steps, got 101",
        ),
        ({"loop": {"max_wait_secs": 0}}, "loop.max_wait_secs", "must be between 1 and 604800"),
        ({"loop": {"on_stuck": "retry"}}, "loop.on_stuck", 'must be "stop" or "decompose"'),
        ({"loop": {"hook_timeout_secs": 0}}, "loop.hook_timeout_secs", "between 1 and 3600"),
        ({"budget": {"max_cost_usd": 0}}, "budget.max_cost_usd", "must be > 0"),
        ({"budget": {"max_cost_usd": float("inf")}}, "budget.max_cost_usd", "a number of US"),
        ({"budget": {"max_cost_usd": "5"}}, "budget.max_cost_usd", "a number of US dollars"),
        ({"budget": {"max_cost_usd": 2e6}}, "budget.max_cost_usd", "at most 1000000"),
        ({"budget": {"max_tokens": 0}}, "budget.max_tokens", "must be between 1 and"),
        ({"budget": {"max_tokens": 1.5}}, "budget.max_tokens", "must be an integer, got 1.5"),
        ({"budget": {"max_wall_secs": -5}}, "budget.max_wall_secs", "must be between 1 and"),
        ({"hooks": {"on_stuck": []}}, "hooks.on_stuck", "must not be empty"),
        ({"hooks": {"on_stuck": "curl x"}}, "hooks.on_stuck", "must be an array of strings"),
        ({"hooks": {"on_stuck": ["curl", ""]}}, "hooks.on_stuck", "must not contain empty"),
        ({"hooks": {"on_stuck": ["", "x"]}}, "hooks.on_stuck", "the program (first element)"),
    ],
)
def test_a_bad_loop_budget_or_hook_value_is_an_error_naming_its_key(
    data: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)
    assert raised.value.key == key
    assert problem in raised.value.problem


def test_the_default_config_file_says_the_loop_keys_and_shows_budgets_and_hooks() -> None:
    lines = render_config(Config()).splitlines()
    for line in [
        "[loop]",
        "max_consecutive_runner_errors = 3",
        "runner_error_backoff_secs = [30, 120, 600]",
        "max_wait_secs = 21600",
        'on_stuck = "stop"',
        "hook_timeout_secs = 30",
        "[budget]",
        "# max_cost_usd = 20.0",
        "# max_tokens = 5000000",
        "# max_wall_secs = 28800",
        "[hooks]",
        *(f"# {name} = " for name in HOOK_NAMES),
    ]:
        assert any(written.startswith(line) for written in lines), line


@pytest.mark.parametrize(
    "config",
    [
        Config(),
        Config(
            loop=LoopConfig(0, (0,), 1, "decompose", 1),
            budget=BudgetConfig(0.01, 1, 1),
            hooks=HooksConfig(
                on_complete=("curl", "-d", "@-", "https://ntfy.sh/x"), on_wait=("ü",)
            ),
        ),
        Config(budget=BudgetConfig(max_cost_usd=1e-05, max_tokens=10**12)),
    ],
    ids=["defaults", "every key set", "tiny and huge budgets"],
)
def test_rendered_loop_tables_read_back_unchanged(config: Config) -> None:
    assert parse_config(tomllib.loads(render_config(config))) == config


def test_a_huge_loop_or_budget_integer_is_one_line_naming_its_key() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"loop": {"max_wait_secs": 10**5000}})
    assert (raised.value.key, raised.value.problem) == (
        "loop.max_wait_secs",
        "must be between 1 and 604800, got a number of more than 20 digits",
    )
