"""A remote job's window of events, and which of them the loop emits live
(runner_shell.remote.live_events)."""

from __future__ import annotations

import pytest

from runner_shell.remote.live_events import Window, fresh_events, read_window, window_json


def test_a_window_gives_the_events_not_emitted_yet() -> None:
    window = Window(5, ("c", "d", "e"))
    assert fresh_events(window, 3) == (("d", "e"), 5)


def test_a_window_past_the_emitted_events_gives_none_and_the_answer_brings_them() -> None:
    window = Window(60, tuple(range(10, 60)))
    assert fresh_events(window, 4) == ((), 4)


def test_an_older_window_gives_none() -> None:
    assert fresh_events(Window(2, ("a", "b")), 5) == ((), 5)


def test_only_the_last_fifty_events_are_in_a_window() -> None:
    window = read_window(window_json(list(range(120))))
    assert window == Window(120, tuple(range(70, 120)))


@pytest.mark.parametrize(
    "details",
    [
        None,
        "",
        "shouting",
        "[]",
        '{"seen": 1}',
        '{"seen": true, "events": []}',
        '{"seen": 1, "events": [1, 2]}',
        '{"seen": -1, "events": []}',
        "[" * 100_000 + "]" * 100_000,  # deeper than the parser goes
    ],
)
def test_details_that_are_not_a_window_are_none(details: str | None) -> None:
    assert read_window(details) is None
