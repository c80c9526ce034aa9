"""Properties of a remote job's live events (runner_shell.remote.live_events): whatever windows
the loop reads while the job runs (each the last events of a growing list, read in any order,
any number skipped), emitting each window's fresh events and then, at the answer, the job's
events from where it stopped emits every event of the job exactly once, in order."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_shell.remote.live_events import (
    WINDOW_EVENTS,
    Window,
    fresh_events,
    read_window,
    window_json,
)

SETTINGS = settings(max_examples=300, deadline=None)


@st.composite
def job_and_looks(draw: st.DrawFn) -> tuple[list[object], list[int]]:
    """A job's encoded events, and how many it had emitted at each of the loop's looks."""
    total = draw(st.integers(0, 3 * WINDOW_EVENTS))
    events: list[object] = [{"n": number, "type": "agent_output"} for number in range(total)]
    looks = draw(st.lists(st.integers(0, total), max_size=30))
    if draw(st.booleans()):
        looks.sort()  # most often the loop sees the job grow
    return events, looks


@SETTINGS
@given(job_and_looks())
def test_live_windows_then_the_answer_emit_every_event_once_in_order(
    job: tuple[list[object], list[int]],
) -> None:
    """Every event of the job is emitted exactly once, in order, live or at the answer."""
    events, looks = job
    emitted_events: list[object] = []
    emitted = 0
    for seen in looks:
        window = read_window(window_json(events[:seen]))
        assert window is not None
        fresh, emitted = fresh_events(window, emitted)
        emitted_events.extend(fresh)
        assert emitted_events == events[:emitted]
    emitted_events.extend(events[emitted:])  # the answer
    assert emitted_events == events


@SETTINGS
@given(st.lists(st.dictionaries(st.text(max_size=5), st.integers()), max_size=120))
def test_a_window_is_canonical_json_of_the_last_events(events: list[object]) -> None:
    """A window is canonical JSON holding how many events there are and the last of them."""
    text = window_json(events)
    assert text == json.dumps(
        json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert read_window(text) == Window(len(events), tuple(events[-WINDOW_EVENTS:]))
