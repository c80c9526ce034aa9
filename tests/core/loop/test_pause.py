"""`runner stop`'s pause: checked between iterations, it ends the loop with exit 0, its own
`loop: status=paused` line and a `paused` event that `runner follow` takes as the loop's end."""

from __future__ import annotations

from runner_core.loop.events import EventOrigin, EventType
from runner_core.loop.pause import pause_before_step
from runner_core.loop.policy import ends_the_loop, hooks_for
from runner_core.views.loop_lines import paused_line

ORIGIN = EventOrigin("run-1", 4, "root.2", "2026-01-01T00:00:00.000Z")


def test_no_request_goes_on() -> None:
    assert pause_before_step(False, ORIGIN, 3, 1) is None


def test_a_request_pauses_with_exit_0_a_line_and_an_event_that_ends_the_loop() -> None:
    pause = pause_before_step(True, ORIGIN, 3, 1)
    assert pause is not None
    assert pause.exit_code == 0
    assert paused_line("run-1", 3, 1) == "loop: status=paused run=run-1 steps=3 started_at_iter=1"
    assert (pause.event.type, pause.event.node_id, pause.event.iter) == (EventType.PAUSED, None, 4)
    assert dict(pause.event.figures) == {"steps": 3}
    assert ends_the_loop(pause.event)


def test_new_questions_fire_on_question() -> None:
    assert hooks_for((EventType.QUESTION, EventType.PAUSED)) == ("on_question",)
