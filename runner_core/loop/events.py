"""The run's event stream: what each event of `events.jsonl` holds.

Decides the event types and the figures each carries, the canonical one-line JSON of an event,
how a file's bytes read back as events (a torn last line is ignored, a damaged line is a
warning), and when new agent output lines are emitted (rate-limited and capped). Never reads
the clock or writes the file: the shell passes `at` as an ISO-8601 UTC string and appends lines.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs
from pyrsistent import PMap, freeze, thaw


class EventType(enum.StrEnum):
    LOOP_STARTED = "loop_started"
    ITERATION_STARTED = "iteration_started"
    AGENT_STARTED = "agent_started"
    AGENT_OUTPUT = "agent_output"
    AGENT_FINISHED = "agent_finished"
    GUARD_STARTED = "guard_started"
    GUARD_FINISHED = "guard_finished"
    ITERATION_FINISHED = "iteration_finished"
    WAITING = "waiting"
    FALLBACK = "fallback"
    RUNNER_ERROR = "runner_error"
    STUCK = "stuck"
    BUDGET_EXHAUSTED = "budget_exhausted"
    LIMIT_REACHED = "limit_reached"
    COMPLETE = "complete"
    OPERATOR = "operator"
    HOOK_FAILED = "hook_failed"
    PAUSED = "paused"
    QUESTION = "question"


# Every event has these keys; `node_id` is null for events of the whole run.
ENVELOPE_FIELDS: tuple[str, ...] = ("type", "run_id", "iter", "node_id", "at")

# The figures each event type carries, beside the envelope. schemas/events.schema.json documents
# the same table; tests/test_events.py keeps the two equal.
EVENT_FIELDS: Mapping[EventType, tuple[str, ...]] = MappingProxyType(
    {
        EventType.LOOP_STARTED: (),
        EventType.ITERATION_STARTED: ("role", "attempts", "max_attempts"),
        EventType.AGENT_STARTED: ("role", "backend"),
        EventType.AGENT_OUTPUT: ("source", "lines", "dropped"),
        EventType.AGENT_FINISHED: ("exit_code", "duration_ms"),
        EventType.GUARD_STARTED: ("argv",),
        EventType.GUARD_FINISHED: ("outcome", "exit_code", "duration_ms", "run"),
        EventType.ITERATION_FINISHED: ("meta",),
        EventType.WAITING: ("reason", "until", "secs"),
        EventType.FALLBACK: ("backend", "to", "until"),
        EventType.RUNNER_ERROR: ("error", "consecutive", "max_consecutive"),
        EventType.STUCK: ("action",),
        EventType.BUDGET_EXHAUSTED: ("budget", "spent", "limit"),
        EventType.LIMIT_REACHED: ("kind", "message", "retry_at", "retry_after_secs"),
        EventType.COMPLETE: ("steps",),
        EventType.OPERATOR: ("command", "detail"),
        EventType.HOOK_FAILED: ("hook", "argv", "outcome", "detail"),
        EventType.PAUSED: ("steps",),
        EventType.QUESTION: ("questions",),
    }
)


def _frozen(figures: Mapping[str, Any]) -> PMap[str, Any]:
    # Tuples become vectors too, so an event equals itself read back from its line.
    frozen: PMap[str, Any] = freeze(_lists_for_tuples(figures))
    return frozen


def _lists_for_tuples(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _lists_for_tuples(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_lists_for_tuples(item) for item in value]
    return value


class DamagedEvent(ValueError):
    """A line of `events.jsonl` that is not an event."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _is_strings(value: Any) -> bool:
    # A frozen event holds a pvector where its JSON has an array.
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(item, str) for item in value)
    )


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# What each figure must be, by name (a name means the same thing in every event type), so a
# reader can trust an event's figures; the schema also pins the words some strings may be.
FIGURE_KINDS: Mapping[str, tuple[str, Callable[[Any], bool]]] = MappingProxyType(
    {
        **{
            name: ("a string", _is_str)
            for name in (
                "role",
                "backend",
                "source",
                "outcome",
                "reason",
                "until",
                "error",
                "action",
                "budget",
                "kind",
                "message",
                "command",
                "detail",
                "hook",
                "questions",
                "run",
                "to",
            )
        },
        **{
            name: ("an integer >= 0", _is_count)
            for name in (
                "attempts",
                "max_attempts",
                "dropped",
                "duration_ms",
                "secs",
                "consecutive",
                "max_consecutive",
                "steps",
            )
        },
        "exit_code": ("an integer or null", lambda value: value is None or _is_int(value)),
        "retry_after_secs": (
            "an integer >= 0 or null",
            lambda value: value is None or _is_count(value),
        ),
        "retry_at": ("a string or null", lambda value: value is None or _is_str(value)),
        "lines": ("an array of strings", _is_strings),
        "argv": ("an array of strings", _is_strings),
        "meta": ("an object", lambda value: isinstance(value, Mapping)),
        "spent": (
            "a number",
            lambda value: isinstance(value, int | float) and not isinstance(value, bool),
        ),
        "limit": (
            "a number",
            lambda value: isinstance(value, int | float) and not isinstance(value, bool),
        ),
    }
)


def figure_problem(event_type: EventType, figures: Mapping[str, Any]) -> str | None:
    """What is wrong with `figures` for an event of `event_type`, None when nothing is."""
    if set(figures) != set(EVENT_FIELDS[event_type]):
        return f"{event_type.value} needs exactly {', '.join(EVENT_FIELDS[event_type])}"
    for name in EVENT_FIELDS[event_type]:
        what, fits = FIGURE_KINDS[name]
        if not fits(figures[name]):
            return f"{event_type.value}: {name!r} must be {what}"
    return None


@attrs.frozen(slots=True)
class Event:
    """One line of `events.jsonl`: the envelope and the figures of its type."""

    type: EventType
    run_id: str
    iter: int
    node_id: str | None
    at: str
    figures: PMap[str, Any] = attrs.field(converter=_frozen)

    def __attrs_post_init__(self) -> None:
        problem = figure_problem(self.type, self.figures)
        if problem is not None:
            raise DamagedEvent(problem)


def make_event(
    event_type: EventType,
    run_id: str,
    iteration: int,
    node_id: str | None,
    at: str,
    **figures: Any,
) -> Event:
    """An event of `event_type`; `figures` must name exactly the type's fields."""
    return Event(event_type, run_id, iteration, node_id, at, _frozen(figures))


def event_to_json(event: Event) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": event.type.value,
        "run_id": event.run_id,
        "iter": event.iter,
        "node_id": event.node_id,
        "at": event.at,
    }
    body.update(thaw(event.figures))
    return body


def event_line(event: Event) -> str:
    """Canonical JSON of an event: sorted keys, no spaces, raw UTF-8, one trailing newline."""
    text = json.dumps(
        event_to_json(event),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return text + "\n"


def _envelope_problem(body: Mapping[str, Any]) -> str | None:
    for key in ENVELOPE_FIELDS:
        if key not in body:
            return f"missing {key!r}"
    if not isinstance(body["run_id"], str) or not body["run_id"]:
        return "'run_id' must be a non-empty string"
    if not isinstance(body["iter"], int) or isinstance(body["iter"], bool) or body["iter"] < 0:
        return "'iter' must be an integer >= 0"
    if body["node_id"] is not None and not isinstance(body["node_id"], str):
        return "'node_id' must be a string or null"
    if not isinstance(body["at"], str):
        return "'at' must be an ISO-8601 string"
    return None


def event_from_json(body: Any) -> Event:
    """An event from a parsed JSON line; raises `DamagedEvent` saying what is wrong."""
    if not isinstance(body, dict):
        raise DamagedEvent("not a JSON object")
    problem = _envelope_problem(body)
    if problem is not None:
        raise DamagedEvent(problem)
    try:
        event_type = EventType(body["type"])
    except ValueError:
        raise DamagedEvent(f"unknown event type {body['type']!r}") from None
    figures = {key: value for key, value in body.items() if key not in ENVELOPE_FIELDS}
    problem = figure_problem(event_type, figures)
    if problem is not None:
        raise DamagedEvent(problem)
    return Event(event_type, body["run_id"], body["iter"], body["node_id"], body["at"], figures)


def parse_event_lines(
    data: bytes, first_line: int = 1
) -> tuple[tuple[Event, ...], tuple[str, ...]]:
    """The events in `data` and a warning per damaged line (`line N: problem`).

    A last line without its newline is a write torn by a kill: it is ignored, not a warning.
    `first_line` numbers the first line of `data` (a reader that goes on from an earlier read).
    """
    lines = data.split(b"\n")
    complete = lines[:-1]
    events: list[Event] = []
    warnings: list[str] = []
    for number, raw in enumerate(complete, start=first_line):
        try:
            events.append(event_from_json(json.loads(raw.decode("utf-8"))))
        except UnicodeDecodeError:
            warnings.append(f"line {number}: not UTF-8")
        except json.JSONDecodeError as error:
            warnings.append(f"line {number}: not JSON ({error.msg})")
        except DamagedEvent as error:
            warnings.append(f"line {number}: {error}")
    return tuple(events), tuple(warnings)


# ---------------------------------------------------------------- constructors


@attrs.frozen(slots=True)
class EventOrigin:
    """Where and when an event happens: the envelope every constructor below fills in."""

    run_id: str
    iteration: int
    node_id: str | None
    at: str


def _event(origin: EventOrigin, event_type: EventType, **figures: Any) -> Event:
    return make_event(
        event_type, origin.run_id, origin.iteration, origin.node_id, origin.at, **figures
    )


def loop_started(origin: EventOrigin) -> Event:
    """A `runner loop` began at `origin`'s iteration: where `runner follow` starts its replay."""
    return _event(origin, EventType.LOOP_STARTED)


def iteration_started(origin: EventOrigin, role: str, attempts: int, max_attempts: int) -> Event:
    return _event(
        origin, EventType.ITERATION_STARTED, role=role, attempts=attempts, max_attempts=max_attempts
    )


def agent_started(origin: EventOrigin, role: str, backend: str) -> Event:
    return _event(origin, EventType.AGENT_STARTED, role=role, backend=backend)


def agent_output(origin: EventOrigin, source: str, lines: tuple[str, ...], dropped: int) -> Event:
    """New lines of a running process; `source` is the log they go to (executor, guard, ...)."""
    return _event(origin, EventType.AGENT_OUTPUT, source=source, lines=lines, dropped=dropped)


def agent_finished(origin: EventOrigin, exit_code: int | None, duration_ms: int) -> Event:
    return _event(origin, EventType.AGENT_FINISHED, exit_code=exit_code, duration_ms=duration_ms)


def guard_started(origin: EventOrigin, argv: tuple[str, ...]) -> Event:
    return _event(origin, EventType.GUARD_STARTED, argv=argv)


# A guard run judged by its report (ratchet mode, a baseline or a rerun): its exit code is
# no verdict; the iteration's is in iteration_finished.
REPORTED = "reported"


def guard_finished(
    origin: EventOrigin, outcome: str, exit_code: int | None, duration_ms: int, run: str = "judge"
) -> Event:
    return _event(
        origin,
        EventType.GUARD_FINISHED,
        outcome=outcome,
        exit_code=exit_code,
        duration_ms=duration_ms,
        run=run,
    )


def iteration_finished(origin: EventOrigin, meta: Mapping[str, Any]) -> Event:
    """The iteration's `meta.json` record, as written."""
    return _event(origin, EventType.ITERATION_FINISHED, meta=meta)


def waiting(origin: EventOrigin, reason: str, until: str, secs: int) -> Event:
    return _event(origin, EventType.WAITING, reason=reason, until=until, secs=secs)


def fallback(origin: EventOrigin, backend: str, to: str, until: str) -> Event:
    """`backend` hit a limit in force until `until`: `to` runs next instead of a wait."""
    return _event(origin, EventType.FALLBACK, backend=backend, to=to, until=until)


def runner_error(origin: EventOrigin, error: str, consecutive: int, max_consecutive: int) -> Event:
    return _event(
        origin,
        EventType.RUNNER_ERROR,
        error=error,
        consecutive=consecutive,
        max_consecutive=max_consecutive,
    )


def stuck(origin: EventOrigin, action: str) -> Event:
    """A stuck leaf and what the loop does about it: "stop" or "decompose"."""
    return _event(origin, EventType.STUCK, action=action)


def budget_exhausted(origin: EventOrigin, budget: str, spent: float, limit: float) -> Event:
    return _event(origin, EventType.BUDGET_EXHAUSTED, budget=budget, spent=spent, limit=limit)


def limit_reached(
    origin: EventOrigin,
    kind: str,
    message: str,
    retry_at: str | None,
    retry_after_secs: int | None,
) -> Event:
    return _event(
        origin,
        EventType.LIMIT_REACHED,
        kind=kind,
        message=message,
        retry_at=retry_at,
        retry_after_secs=retry_after_secs,
    )


def complete(origin: EventOrigin, steps: int) -> Event:
    return _event(origin, EventType.COMPLETE, steps=steps)


def paused(origin: EventOrigin, steps: int) -> Event:
    """`runner stop` ended the loop between iterations; `runner loop` resumes."""
    return _event(origin, EventType.PAUSED, steps=steps)


def question(origin: EventOrigin, questions: str) -> Event:
    """An iteration left new open questions for a human (`runner answer` replies)."""
    return _event(origin, EventType.QUESTION, questions=questions)


def operator(origin: EventOrigin, command: str, detail: str) -> Event:
    """An operator's node command (`runner node ...`) recorded in the run's stream."""
    return _event(origin, EventType.OPERATOR, command=command, detail=detail)


def hook_failed(
    origin: EventOrigin, hook: str, argv: tuple[str, ...], outcome: str, detail: str
) -> Event:
    """A hook that failed, timed out or could not start; it never changes the run."""
    return _event(
        origin, EventType.HOOK_FAILED, hook=hook, argv=argv, outcome=outcome, detail=detail
    )


# ---------------------------------------------------------------- agent output
