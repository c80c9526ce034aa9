"""`runner follow` while a parallel run's jobs interleave: their agent and guard lines are
tagged with their iteration and node; a one-slot run's lines never are."""

from __future__ import annotations

from collections.abc import Iterable

from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin
from runner_core.views.follow import event_text, followed_text, in_flight_after

AT = "2026-11-22T02:00:00Z"


def _at(iteration: int, node_id: str | None) -> EventOrigin:
    return EventOrigin("run-1", iteration, node_id, AT)


def _lines(log: Iterable[Event]) -> list[str]:
    in_flight: frozenset[int] = frozenset()
    shown: list[str] = []
    for event in log:
        in_flight, lines = followed_text(in_flight, event)
        shown.extend(lines)
    return shown


def _job(number: int, node_id: str) -> tuple[Event, Event, Event]:
    here = _at(number, node_id)
    return (
        events.iteration_started(here, "executor", 0, 3),
        events.agent_started(here, "executor", "command"),
        events.agent_output(here, "agent", (f"working on {node_id}",), 0),
    )


def _finished(number: int, node_id: str) -> Event:
    meta = {"status": "done", "guard": "pass"}
    return events.iteration_finished(_at(number, node_id), meta)


def test_interleaved_jobs_lines_name_their_iteration_and_node() -> None:
    start_a, agent_a, output_a = _job(3, "a")
    start_b, agent_b, output_b = _job(4, "b")
    log = (
        events.loop_started(_at(3, None)),
        start_a,
        agent_a,
        start_b,
        agent_b,
        output_a,
        output_b,
        _finished(3, "a"),
        events.agent_output(_at(4, "b"), "agent", ("alone again",), 0),
    )
    assert _lines(log) == [
        "loop: start run=run-1 iter=3",
        "iter 3 node=a role=executor attempts=0/3",
        "  agent started: command (executor)",
        "iter 4 node=b role=executor attempts=0/3",
        "  [iter=4 node=b] agent started: command (executor)",
        "  [iter=3 node=a] | working on a",
        "  [iter=4 node=b] | working on b",
        "loop: step run=run-1 iter=3 node=a status=done guard=pass",
        "  | alone again",
    ]


def test_one_iteration_at_a_time_reads_as_event_text() -> None:
    log = [events.loop_started(_at(1, None))]
    for number, node_id in ((1, "a"), (2, "b")):
        log.extend((*_job(number, node_id), _finished(number, node_id)))
    assert _lines(log) == [line for event in log for line in event_text(event)]


def test_a_new_loop_forgets_a_killed_runners_iterations() -> None:
    killed = in_flight_after(frozenset(), _job(5, "a")[0])
    assert killed == {5}
    assert in_flight_after(killed, events.loop_started(_at(6, None))) == frozenset()
