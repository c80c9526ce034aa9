"""Properties of what `runner follow` replays: the current loop is a suffix of the log that
begins at the last loop start, holds one loop, and is exactly a new loop once one starts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from property_tests.test_event_properties import any_event
from runner_core.loop.events import Event, EventOrigin, EventType, loop_started
from runner_core.loop.policy import ends_the_loop
from runner_core.views.follow import CurrentLoop, LastEvents, SinceIteration, replayed

logs = st.lists(any_event(), max_size=30).map(tuple)
loop_start = st.integers(min_value=0, max_value=10**6).map(
    lambda iteration: loop_started(EventOrigin("run-1", iteration, None, "2026-01-01T00:00:00Z"))
)


def _not_a_start(event: Event) -> bool:
    return event.type is not EventType.LOOP_STARTED


@given(logs)
def test_the_current_loop_is_a_suffix_that_starts_at_most_once(log: tuple[Event, ...]) -> None:
    """The replay is the log's tail, replaying it again changes nothing, and a loop start in it
    is only its first event."""
    current = replayed(log, CurrentLoop())
    assert log[len(log) - len(current) :] == current
    assert replayed(current, CurrentLoop()) == current
    assert all(_not_a_start(event) for event in current[1:])


def _within_a_loop(event: Event) -> bool:
    return _not_a_start(event) and not ends_the_loop(event)


def _after_its_end(event: Event) -> bool:
    return _not_a_start(event) and event.type is not EventType.ITERATION_STARTED


@given(
    logs,
    loop_start,
    st.lists(any_event().filter(_within_a_loop), max_size=20),
    st.lists(any_event().filter(ends_the_loop), max_size=1),
    st.lists(any_event().filter(_after_its_end), max_size=5),
)
def test_once_a_loop_starts_only_its_events_are_replayed(
    before: tuple[Event, ...],
    start: Event,
    during: list[Event],
    end: list[Event],
    after: list[Event],
) -> None:
    """Whatever an earlier loop left in the log, a loop that starts is replayed from its start,
    through its end and what followed it (a hook's failure) until an iteration begins again."""
    loop = (start, *during, *end, *after)
    assert replayed((*before, *loop), CurrentLoop()) == loop


@given(logs, st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=10**6))
def test_the_last_n_and_since_an_iteration_are_suffixes(
    log: tuple[Event, ...], count: int, iteration: int
) -> None:
    """`-n N` replays min(N, all) events; `--since ITER` starts at the first event of ITER or
    later, so nothing before it is of ITER or later."""
    assert replayed(log, LastEvents(count)) == log[len(log) - min(count, len(log)) :]
    since = replayed(log, SinceIteration(iteration))
    skipped = log[: len(log) - len(since)]
    assert log[len(skipped) :] == since
    assert all(event.iter < iteration for event in skipped)
    assert not since or since[0].iter >= iteration
