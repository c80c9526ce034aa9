"""The event stream of a run: its types, its JSON lines, reading them back, and agent output."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from runner_core.loop import events
from runner_core.loop.events import (
    EVENT_FIELDS,
    FIGURE_KINDS,
    DamagedEvent,
    Event,
    EventOrigin,
    EventType,
    event_line,
    make_event,
    parse_event_lines,
)
from runner_core.loop.output import (
    OutputPolicy,
    PendingOutput,
    add_output,
    decide_output,
)

AT = "2026-11-22T02:00:00Z"
ORIGIN = EventOrigin("run-1", 4, "root.1", AT)
RUN_ORIGIN = EventOrigin("run-1", 4, None, AT)

ONE_OF_EACH: dict[EventType, Event] = {
    EventType.LOOP_STARTED: events.loop_started(RUN_ORIGIN),
    EventType.ITERATION_STARTED: events.iteration_started(ORIGIN, "executor", 1, 3),
    EventType.AGENT_STARTED: events.agent_started(ORIGIN, "executor", "codex"),
    EventType.AGENT_OUTPUT: events.agent_output(ORIGIN, "executor", ("a", "ü ✓"), 2),
    EventType.AGENT_FINISHED: events.agent_finished(ORIGIN, 0, 1200),
    EventType.GUARD_STARTED: events.guard_started(ORIGIN, ("just", "ci")),
    EventType.GUARD_FINISHED: events.guard_finished(ORIGIN, "pass", 0, 300),
    EventType.ITERATION_FINISHED: events.iteration_finished(
        ORIGIN, {"run_id": "run-1", "iter": 4, "tokens": {"input": 1, "output": 2, "cached": 0}}
    ),
    EventType.WAITING: events.waiting(RUN_ORIGIN, "rate_limited", "2026-11-22T02:00:30Z", 30),
    EventType.FALLBACK: events.fallback(ORIGIN, "codex", "claude", "2026-11-22T02:00:30Z"),
    EventType.RUNNER_ERROR: events.runner_error(ORIGIN, "agent_timeout", 1, 3),
    EventType.STUCK: events.stuck(ORIGIN, "decompose"),
    EventType.BUDGET_EXHAUSTED: events.budget_exhausted(RUN_ORIGIN, "cost_usd", 5.25, 5.0),
    EventType.LIMIT_REACHED: events.limit_reached(
        ORIGIN, "usage_limited", "You\u2019ve hit your usage limit.", "2026-11-22T03:00:00Z", None
    ),
    EventType.COMPLETE: events.complete(RUN_ORIGIN, 12),
    EventType.OPERATOR: events.operator(ORIGIN, "reset", "attempts 3 -> 0"),
    EventType.HOOK_FAILED: events.hook_failed(
        RUN_ORIGIN, "on_complete", ("notify-send", "done"), "timed_out", "killed after 30s"
    ),
    EventType.PAUSED: events.paused(RUN_ORIGIN, 2),
    EventType.QUESTION: events.question(ORIGIN, "- Which database?\n"),
}


def _schema() -> dict[str, Any]:
    text = resources.files("runner_core.schemas").joinpath("events.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def test_there_is_a_constructor_example_for_every_event_type() -> None:
    assert set(ONE_OF_EACH) == set(EventType)
    assert all(event.type is kind for kind, event in ONE_OF_EACH.items())


@pytest.mark.parametrize("kind", list(EventType), ids=lambda kind: kind.value)
def test_every_event_type_validates_against_the_shipped_schema(kind: EventType) -> None:
    jsonschema.validate(json.loads(event_line(ONE_OF_EACH[kind])), _schema())


def test_the_schema_names_exactly_the_fields_of_every_event_type() -> None:
    by_type = {
        entry["properties"]["type"]["const"]: entry["required"] for entry in _schema()["oneOf"]
    }
    assert by_type == {
        kind.value: ["type", "run_id", "iter", "node_id", "at", *fields]
        for kind, fields in EVENT_FIELDS.items()
    }


def test_the_schema_refuses_an_event_with_a_stray_field() -> None:
    body = json.loads(event_line(ONE_OF_EACH[EventType.COMPLETE]))
    body["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, _schema())


def test_an_event_line_is_sorted_compact_raw_utf8_json_with_one_newline() -> None:
    line = event_line(ONE_OF_EACH[EventType.AGENT_OUTPUT])
    assert line == (
        '{"at":"2026-11-22T02:00:00Z","dropped":2,"iter":4,"lines":["a","ü ✓"],'
        '"node_id":"root.1","run_id":"run-1","source":"executor","type":"agent_output"}\n'
    )


def test_an_event_needs_exactly_the_figures_of_its_type() -> None:
    with pytest.raises(DamagedEvent, match=r"^complete needs exactly steps$"):
        make_event(EventType.COMPLETE, "run-1", 1, None, AT)
    with pytest.raises(DamagedEvent, match=r"^complete needs exactly steps$"):
        make_event(EventType.COMPLETE, "run-1", 1, None, AT, steps=1, extra=2)


@pytest.mark.parametrize(
    ("event_type", "figures", "problem"),
    [
        (EventType.COMPLETE, {"steps": -1}, "complete: 'steps' must be an integer >= 0"),
        (EventType.COMPLETE, {"steps": True}, "complete: 'steps' must be an integer >= 0"),
        (
            EventType.AGENT_OUTPUT,
            {"source": "executor", "lines": "one line", "dropped": 0},
            "agent_output: 'lines' must be an array of strings",
        ),
        (
            EventType.AGENT_FINISHED,
            {"exit_code": "1", "duration_ms": 5},
            "agent_finished: 'exit_code' must be an integer or null",
        ),
        (
            EventType.ITERATION_FINISHED,
            {"meta": []},
            "iteration_finished: 'meta' must be an object",
        ),
        (
            EventType.BUDGET_EXHAUSTED,
            {"budget": "tokens", "spent": "5", "limit": 1},
            "budget_exhausted: 'spent' must be a number",
        ),
    ],
)
def test_a_figure_of_the_wrong_kind_is_refused_naming_it(
    event_type: EventType, figures: dict[str, Any], problem: str
) -> None:
    with pytest.raises(DamagedEvent) as raised:
        make_event(event_type, "run-1", 1, None, AT, **figures)
    assert str(raised.value) == problem
    body = {"type": event_type.value, "run_id": "r", "iter": 1, "node_id": None, "at": AT}
    line = json.dumps({**body, **figures}).encode() + b"\n"
    assert parse_event_lines(line) == ((), (f"line 1: {problem}",))


def test_every_figure_name_has_a_kind() -> None:
    assert {name for fields in EVENT_FIELDS.values() for name in fields} == set(FIGURE_KINDS)


def test_a_number_that_json_cannot_say_is_refused() -> None:
    event = events.budget_exhausted(RUN_ORIGIN, "cost_usd", float("nan"), 5.0)
    with pytest.raises(ValueError):
        event_line(event)


def test_lines_read_back_as_the_events_written() -> None:
    data = "".join(event_line(event) for event in ONE_OF_EACH.values()).encode()
    assert parse_event_lines(data) == (tuple(ONE_OF_EACH.values()), ())


def test_a_torn_last_line_is_ignored_without_a_warning() -> None:
    whole = event_line(ONE_OF_EACH[EventType.COMPLETE]).encode()
    assert parse_event_lines(whole + whole[:17]) == ((ONE_OF_EACH[EventType.COMPLETE],), ())


def test_empty_data_holds_no_events() -> None:
    assert parse_event_lines(b"") == ((), ())


@pytest.mark.parametrize(
    ("line", "warning"),
    [
        (b"\xff\xfe", "line 2: not UTF-8"),
        (b"{nope", "line 2: not JSON (Expecting property name enclosed in double quotes)"),
        (b"[1]", "line 2: not a JSON object"),
        (b'{"type":"complete"}', "line 2: missing 'run_id'"),
        (
            b'{"type":"landed","run_id":"r","iter":1,"node_id":null,"at":"x"}',
            "line 2: unknown event type 'landed'",
        ),
        (
            b'{"type":"complete","run_id":"r","iter":1,"node_id":null,"at":"x"}',
            "line 2: complete needs exactly steps",
        ),
        (
            b'{"type":"complete","run_id":"r","iter":-1,"node_id":null,"at":"x","steps":1}',
            "line 2: 'iter' must be an integer >= 0",
        ),
        (
            b'{"type":"complete","run_id":"","iter":1,"node_id":null,"at":"x","steps":1}',
            "line 2: 'run_id' must be a non-empty string",
        ),
        (
            b'{"type":"complete","run_id":"r","iter":1,"node_id":7,"at":"x","steps":1}',
            "line 2: 'node_id' must be a string or null",
        ),
        (
            b'{"type":"complete","run_id":"r","iter":1,"node_id":null,"at":1,"steps":1}',
            "line 2: 'at' must be an ISO-8601 string",
        ),
    ],
)
def test_a_damaged_line_is_a_warning_naming_its_line(line: bytes, warning: str) -> None:
    good = event_line(ONE_OF_EACH[EventType.COMPLETE]).encode()
    found, warnings = parse_event_lines(good + line + b"\n" + good)
    assert found == (ONE_OF_EACH[EventType.COMPLETE],) * 2
    assert warnings == (warning,)


POLICY = OutputPolicy(min_interval_secs=1.0, max_lines=3, max_line_chars=5)


def test_pending_output_keeps_the_newest_lines_and_counts_the_dropped() -> None:
    pending = add_output(PendingOutput(), ("1", "2"), POLICY)
    pending = add_output(pending, ("3", "4", "5"), POLICY)
    assert pending == PendingOutput(("3", "4", "5"), 2)


def test_lines_read_before_those_passed_count_as_dropped_with_the_pending_ones() -> None:
    pending = add_output(PendingOutput(), ("1", "2"), POLICY)
    assert add_output(pending, ("9",), POLICY, earlier=4) == PendingOutput(("9",), 6)
    assert add_output(pending, ("3",), POLICY) == PendingOutput(("1", "2", "3"), 0)
    many = tuple(str(n) for n in range(10))
    assert add_output(pending, many, POLICY) == add_output(pending, many[-3:], POLICY, earlier=7)


def test_a_long_line_is_clipped_with_an_ellipsis() -> None:
    assert add_output(PendingOutput(), ("abcdefgh", "abcde"), POLICY).lines == ("abcd…", "abcde")


def test_the_first_output_is_emitted_at_once() -> None:
    emission = decide_output(PendingOutput(("a",), 0), None, 10.0, POLICY)
    assert (emission.lines, emission.dropped, emission.pending) == (("a",), 0, PendingOutput())


def test_output_waits_until_the_interval_has_passed() -> None:
    pending = PendingOutput(("a",), 1)
    assert decide_output(pending, 10.0, 10.5, POLICY).lines is None
    assert decide_output(pending, 10.0, 10.5, POLICY).pending == pending
    emission = decide_output(pending, 10.0, 11.0, POLICY)
    assert (emission.lines, emission.dropped) == (("a",), 1)


def test_final_output_is_emitted_before_the_interval() -> None:
    assert decide_output(PendingOutput(("a",)), 10.0, 10.1, POLICY, final=True).lines == ("a",)


def test_nothing_pending_emits_nothing() -> None:
    assert decide_output(PendingOutput(), None, 10.0, POLICY, final=True).lines is None
