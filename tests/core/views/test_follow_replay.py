"""What `runner follow` replays before it follows a run: the loop started last by default,
the last N events, or every event from an iteration on; and a line for every event it meets."""

from __future__ import annotations

import pytest

from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin, EventType
from runner_core.views.follow import (
    CurrentLoop,
    LastEvents,
    SinceIteration,
    current_loop_start,
    ended_loop_word,
    event_text,
    loop_has_begun,
    replayed,
)
from tests.core.loop.test_events import ONE_OF_EACH

AT = "2026-11-22T02:00:00Z"


def _at(iteration: int, node_id: str | None = "root.1") -> EventOrigin:
    return EventOrigin("run-1", iteration, node_id, AT)


def _iteration(number: int) -> tuple[Event, ...]:
    here = _at(number)
    return (
        events.iteration_started(here, "executor", 0, 3),
        events.agent_started(here, "executor", "command"),
        events.agent_finished(here, 0, 100),
        events.iteration_finished(here, {"status": "retry", "guard": "skipped"}),
    )


FIRST_LOOP = (
    events.loop_started(_at(1, None)),
    *_iteration(1),
    *_iteration(2),
    events.stuck(_at(2), "stop"),
)
SECOND_LOOP = (events.loop_started(_at(3, None)), *_iteration(3))


def test_the_current_loop_is_the_one_started_last_not_the_first_ever_recorded() -> None:
    log = (*FIRST_LOOP, events.operator(_at(2), "node retry", "attempts 3 -> 0"), *SECOND_LOOP)

    assert replayed(log, CurrentLoop()) == SECOND_LOOP


def test_a_loop_that_ended_is_replayed_whole_with_what_came_after_its_end() -> None:
    failed = events.hook_failed(_at(2, None), "on_stuck", ("notify",), "failed", "exit 1")
    log = (*FIRST_LOOP, failed)

    assert replayed(log, CurrentLoop()) == log


def test_a_log_from_before_loops_announced_their_start_splits_at_the_last_loop_end() -> None:
    old_first = FIRST_LOOP[1:]
    resumed = _iteration(3)

    assert current_loop_start((*old_first, *resumed)) == len(old_first)
    assert replayed(old_first, CurrentLoop()) == old_first


def test_the_last_n_events_and_the_events_since_an_iteration() -> None:
    log = (*FIRST_LOOP, *SECOND_LOOP)

    assert replayed(log, LastEvents(2)) == log[-2:]
    assert replayed(log, LastEvents(0)) == ()
    assert replayed(log, LastEvents(1000)) == log
    assert replayed(log, SinceIteration(2)) == log[5:]
    assert replayed(log, SinceIteration(99)) == ()


@pytest.mark.parametrize(
    ("log", "begun"),
    [
        ((), False),
        ((events.operator(_at(1), "node retry", "attempts 3 -> 0"),), False),
        (FIRST_LOOP[1:3], True),
        (FIRST_LOOP[:1], True),
    ],
    ids=["empty", "operator-only", "an-iteration", "a-loop-start"],
)
def test_a_follower_waits_until_the_log_records_a_loop(log: tuple[Event, ...], begun: bool) -> None:
    assert loop_has_begun(log) is begun


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (events.loop_started(_at(3, None)), "loop: start run=run-1 iter=3"),
        (events.paused(_at(3, None), 2), "loop: status=paused run=run-1 steps=2"),
        (
            events.question(_at(3), "- Which database?\n\n- Which port?\n"),
            "question: - Which database? / - Which port?",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else value.type.value,
)
def test_follow_has_a_line_for_a_loop_s_start_pause_and_questions(event: Event, line: str) -> None:
    assert event_text(event) == (line,)


@pytest.mark.parametrize("kind", list(EventType), ids=lambda kind: kind.value)
def test_every_event_type_has_a_follow_line(kind: EventType) -> None:
    example = ONE_OF_EACH[kind]
    if kind is EventType.ITERATION_FINISHED:
        example = events.iteration_finished(_at(4), {"status": "done", "guard": "pass"})

    assert all(isinstance(line, str) for line in event_text(example))


def test_a_log_is_between_two_loops_once_its_last_loop_stopped_short_of_complete() -> None:
    failed = events.hook_failed(_at(2, None), "on_stuck", ("notify",), "failed", "exit 1")
    done = events.complete(_at(3, None), 1)

    assert ended_loop_word((*FIRST_LOOP, failed)) == "stuck"
    assert ended_loop_word(FIRST_LOOP + SECOND_LOOP) is None  # a loop under way
    assert ended_loop_word((*FIRST_LOOP, *SECOND_LOOP, done)) is None  # nothing comes next
    assert ended_loop_word(()) is None
