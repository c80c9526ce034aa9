"""`[agent] fallback`: backend names with a program of their own, none twice, not the backend."""

from __future__ import annotations

import pytest

from runner_core.run.config import ConfigError, parse_config

CLIS = "claude, codex, copilot, gemini, opencode, qwen"


def test_the_fallback_chain_is_read_in_order() -> None:
    config = parse_config({"agent": {"backend": "codex", "fallback": ["gemini", "claude"]}})
    assert config.agent_fallback == ("gemini", "claude")
    assert parse_config({}).agent_fallback == ()


@pytest.mark.parametrize(
    ("fallback", "message"),
    [
        ("claude", "must be a list of backend names, got 'claude'"),
        ([1], "must be a list of backend names, got [1]"),
        (["gpt"], f"must name backends of {CLIS}, got 'gpt'"),
        (["command"], f"must name backends of {CLIS}, got 'command'"),
        (["codex"], "names a backend twice or names agent.backend: ['codex']"),
        (
            ["claude", "claude"],
            "names a backend twice or names agent.backend: ['claude', 'claude']",
        ),
    ],
)
def test_a_bad_fallback_is_an_error_naming_the_key(fallback: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"agent": {"backend": "codex", "fallback": fallback}})
    assert str(raised.value) == f"agent.fallback: {message}"
