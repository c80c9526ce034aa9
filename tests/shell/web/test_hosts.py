"""runner_shell.web.hosts: the Host headers `runner serve` answers, and which binds are loopback."""

from __future__ import annotations

import pytest

from runner_shell.web.hosts import allowed_hosts, is_loopback


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
