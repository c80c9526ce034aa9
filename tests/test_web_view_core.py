"""runner_core.web_view: the overview's run state word and the Host headers answered."""

from __future__ import annotations

from typing import Any

import pytest

from runner_core.web_view import RUN_STATES, allowed_hosts, is_loopback, run_state_word


def status(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "run": "started",
        "running": None,
        "interrupted": None,
        "selected": {"status": "open"},
        "next_iteration": 3,
        "max_iterations": 10,
    }
    return document | changes


@pytest.mark.parametrize(
    ("changes", "word"),
    [
        ({"run": "not-started"}, "not-started"),
        ({"running": {"iteration": 3}, "selected": {"status": "complete"}}, "running"),
        ({"interrupted": {"iteration": 3}}, "interrupted"),
        ({"selected": {"status": "complete"}, "next_iteration": 11}, "complete"),
        ({"selected": {"status": "stuck"}}, "stuck"),
        ({"next_iteration": 11}, "limit"),
        ({}, "waiting"),
    ],
)
def test_the_run_state_word(changes: dict[str, Any], word: str) -> None:
    assert run_state_word(status(**changes)) == word
    assert word in RUN_STATES


def test_a_loopback_bind_answers_its_loopback_names_only() -> None:
    assert allowed_hosts("127.0.0.1", 8765, "box") == {
        "127.0.0.1:8765",
        "localhost:8765",
        "[::1]:8765",
    }


def test_a_wildcard_bind_also_answers_the_machines_name() -> None:
    assert "box:80" in allowed_hosts("0.0.0.0", 80, "Box")
    assert allowed_hosts("10.0.0.7", 80, "box") == {"10.0.0.7:80"}


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("10.0.0.7", False),
        ("::", False),
    ],
)
def test_which_binds_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
