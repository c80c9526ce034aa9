"""Which programs `runner start` and `runner step` check before they start them
(runner_core/run/programs.py)."""

from __future__ import annotations

from runner_core import parse_config
from runner_core.run.programs import checked_programs

AGENT = [("agent.command", "codex")]


def test_the_agent_guard_and_setup_are_checked() -> None:
    config = parse_config({"guard": {"command": ["just", "ci"]}, "sandbox": {"setup": ["uv"]}})

    assert checked_programs(config, AGENT) == [
        ("agent.command", "codex"),
        ("guard.command", "just"),
        ("sandbox.setup", "uv"),
    ]


def test_a_relative_program_is_the_setups_to_make_only_when_there_is_a_setup() -> None:
    guard = {"command": [".venv/bin/python", "-m", "pytest"]}
    without = parse_config({"guard": guard})
    made = parse_config({"guard": guard, "sandbox": {"setup": ["python3", "-m", "venv", ".venv"]}})

    assert ("guard.command", ".venv/bin/python") in checked_programs(without, AGENT)
    assert checked_programs(made, AGENT) == [
        ("agent.command", "codex"),
        ("sandbox.setup", "python3"),
    ]
    absolute = parse_config({"guard": {"command": ["/usr/bin/make"]}, "sandbox": {"setup": ["x"]}})
    assert ("guard.command", "/usr/bin/make") in checked_programs(absolute, AGENT)
