"""What a person watching a night's run reads: `runner follow` lines and `runner status` extras.

Decides which recorded events `runner follow` replays before it follows the new ones (the
current loop's, the last N, or those from an iteration on), the text line of each event (the
`loop:` lines of `runner loop` plus agent and guard progress, tagged with their iteration while
a parallel run's jobs interleave), the running iteration's lines
(elapsed time, last lines of its log) and the budget lines (spent vs limit). Never reads files
or the clock: the shell passes events, the journal, the times and the log's last lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

import attrs

from runner_core.guard.ratchet import TestFigures
from runner_core.history.records import figures_from_json
from runner_core.iteration.recovery import Journal, shown_status
from runner_core.loop.budget import BudgetUse
from runner_core.loop.events import REPORTED, Event, EventType
from runner_core.loop.policy import ends_the_loop
from runner_core.views.budget_lines import seconds_text
from runner_core.views.loop_lines import budget_fields, fallback_line, status_line, waiting_line

# How many of the running process's last log lines `runner status` shows.
STATUS_TAIL_LINES = 5


def step_line(
    prefix: str,
    run_id: str,
    iteration: int,
    node_id: str,
    status: str,
    guard: str,
    tests: TestFigures | None = None,
) -> str:
    """The line of an iteration done: `runner step`'s (`step:`), `runner loop`'s and `runner
    follow`'s (`loop: step`), from the step's result or its `iteration_finished` event alike;
    `tests=41/45 +3 -0` ends it once the guard wrote a report."""
    line = f"{prefix} run={run_id} iter={iteration} node={node_id} status={status} guard={guard}"
    return line if tests is None else f"{line} {tests.line()}"


@attrs.frozen(slots=True)
class CurrentLoop:
    """Replay the events of the loop started last (the default)."""


@attrs.frozen(slots=True)
class LastEvents:
    """Replay the last `count` events (`runner follow -n`)."""

    count: int


@attrs.frozen(slots=True)
class SinceIteration:
    """Replay every event from the first of `iteration` or a later one (`--since`)."""

    iteration: int


Replay = CurrentLoop | LastEvents | SinceIteration


def _begins_an_iteration(event: Event) -> bool:
    return event.type is EventType.ITERATION_STARTED


def current_loop_start(events: Sequence[Event]) -> int:
    """Where the loop started last begins in `events`: its `loop_started` event. A log written
    before loops announced their start has none: there the loop begins at the first event
    after the last loop end that precedes an iteration; 0 when no loop ended before one."""
    start, after_end = 0, 0
    for index, event in enumerate(events):
        if event.type is EventType.LOOP_STARTED:
            start = after_end = index
        elif ends_the_loop(event):
            after_end = index + 1
        elif _begins_an_iteration(event) and after_end > start:
            start = after_end
    return start


def loop_has_begun(events: Sequence[Event]) -> bool:
    """Whether `events` record any loop (or step) at all; until one does, `runner follow`
    waits for a loop to start instead of returning."""
    return any(
        event.type is EventType.LOOP_STARTED or _begins_an_iteration(event) or ends_the_loop(event)
        for event in events
    )


def waiting_for_loop_line(run_id: str) -> str:
    """What `runner follow` says on stderr while the run has no loop to follow yet."""
    return f"follow: waiting for a loop of run {run_id} to start (Ctrl-C stops)"


def ended_loop_word(events: Sequence[Event]) -> str | None:
    """How the last loop of `events` ended when the log is between two loops (its last event
    that ends a loop comes after any iteration began): `runner follow` then waits for the next
    loop. None while a loop is under way, before any, and after `complete`: a complete run has
    no next loop to wait for."""
    for event in reversed(events):
        if ends_the_loop(event):
            return None if event.type is EventType.COMPLETE else _END_WORDS[event.type]
        if event.type is EventType.LOOP_STARTED or _begins_an_iteration(event):
            return None
    return None


_END_WORDS: Mapping[EventType, str] = MappingProxyType(
    {
        EventType.BUDGET_EXHAUSTED: "budget",
        EventType.PAUSED: "stopped",
        EventType.LIMIT_REACHED: "limit",
        EventType.STUCK: "stuck",
        EventType.RUNNER_ERROR: "runner_errors",
    }
)


def waiting_for_next_loop_line(run_id: str, ended: str) -> str:
    """What `runner follow` says on stderr between two loops, after the replayed events."""
    return (
        f"follow: the last loop of run {run_id} ended (status={ended}); "
        "waiting for the next one (Ctrl-C stops)"
    )


def replayed(events: Sequence[Event], replay: Replay) -> tuple[Event, ...]:
    """The recorded events `runner follow` prints before the new ones, oldest first."""
    match replay:
        case CurrentLoop():
            return tuple(events[current_loop_start(events) :])
        case LastEvents(count=count):
            return tuple(events[max(len(events) - count, 0) :]) if count > 0 else ()
        case SinceIteration(iteration=iteration):
            first = next((i for i, e in enumerate(events) if e.iter >= iteration), len(events))
            return tuple(events[first:])


def _step(event: Event, f: Mapping[str, Any]) -> str:
    meta = f["meta"]
    node_id = str(event.node_id)
    tests = figures_from_json(meta.get("tests"))
    status = shown_status(
        meta["status"],
        meta.get("error_kind"),
        meta.get("error"),
        bool(meta.get("merge_rerun")),
        meta.get("merge_session"),
    )
    return step_line("loop: step", event.run_id, event.iter, node_id, status, meta["guard"], tests)


def _guard_finished(f: Mapping[str, Any]) -> str:
    """A guard run's end: the exit code's verdict in exit mode; a run judged by its report
    says so, and the verdict comes with the iteration's line."""
    run = f.get("run", "judge")
    head = "  guard finished" + ("" if run == "judge" else f" ({run})")
    after = f"after {seconds_text(f['duration_ms'])}"
    if f["outcome"] == REPORTED:
        return f"{head}: exit={f['exit_code']} {after}; judged by its report"
    return f"{head}: {f['outcome']} exit={f['exit_code']} {after}"


_LINES: Mapping[EventType, Callable[[Event, Mapping[str, Any]], str]] = MappingProxyType(
    {
        EventType.LOOP_STARTED: lambda e, f: f"loop: start run={e.run_id} iter={e.iter}",
        EventType.ITERATION_STARTED: lambda e, f: (
            f"iter {e.iter} node={e.node_id} role={f['role']} "
            f"attempts={f['attempts']}/{f['max_attempts']}"
        ),
        EventType.AGENT_STARTED: lambda e, f: f"  agent started: {f['backend']} ({f['role']})",
        EventType.AGENT_FINISHED: lambda e, f: (
            f"  agent finished: exit={f['exit_code']} after {seconds_text(f['duration_ms'])}"
        ),
        EventType.GUARD_STARTED: lambda e, f: f"  guard started: {' '.join(f['argv'])}",
        EventType.GUARD_FINISHED: lambda e, f: _guard_finished(f),
        EventType.ITERATION_FINISHED: _step,
        EventType.WAITING: lambda e, f: waiting_line(e.run_id, f["reason"], f["until"], f["secs"]),
        EventType.FALLBACK: lambda e, f: fallback_line(e.run_id, f["backend"], f["to"], f["until"]),
        EventType.RUNNER_ERROR: lambda e, f: (
            f"loop: runner_error run={e.run_id} iter={e.iter} node={e.node_id} "
            f"consecutive={f['consecutive']}/{f['max_consecutive']} error={f['error']}"
        ),
        EventType.LIMIT_REACHED: lambda e, f: (
            f"loop: limit run={e.run_id} iter={e.iter} kind={f['kind']} message={f['message']}"
        ),
        EventType.STUCK: lambda e, f: status_line(
            "stuck", e.run_id, f"id={e.node_id} action={f['action']}"
        ),
        EventType.BUDGET_EXHAUSTED: lambda e, f: status_line(
            "budget", e.run_id, budget_fields(BudgetUse(f["budget"], f["spent"], f["limit"]))
        ),
        EventType.COMPLETE: lambda e, f: status_line("complete", e.run_id, f"steps={f['steps']}"),
        EventType.PAUSED: lambda e, f: status_line("paused", e.run_id, f"steps={f['steps']}"),
        EventType.QUESTION: lambda e, f: (
            "question: "
            + " / ".join(line.strip() for line in f["questions"].splitlines() if line.strip())
        ),
        EventType.OPERATOR: lambda e, f: f"operator: {f['command']} {f['detail']}",
        EventType.HOOK_FAILED: lambda e, f: (
            f"hook {f['hook']} {f['outcome']}: {f['detail']} (the run goes on)"
        ),
    }
)


def event_text(event: Event) -> tuple[str, ...]:
    """The lines `runner follow` prints for `event`; agent output is one line per line."""
    if event.type is EventType.AGENT_OUTPUT:
        dropped = event.figures["dropped"]
        skipped = (f"  | ... {dropped} lines not shown",) if dropped else ()
        return skipped + tuple(f"  | {line}" for line in event.figures["lines"])
    return (_LINES[event.type](event, event.figures),)


# The events of one iteration whose lines do not name it: while the jobs of a parallel run
# interleave in events.jsonl, `runner follow` tags them with their iteration and node.
_UNNAMED = frozenset(
    {
        EventType.AGENT_STARTED,
        EventType.AGENT_OUTPUT,
        EventType.AGENT_FINISHED,
        EventType.GUARD_STARTED,
        EventType.GUARD_FINISHED,
    }
)


def in_flight_after(in_flight: frozenset[int], event: Event) -> frozenset[int]:
    """The iterations started and not yet finished once `event` is read: a loop's start or end
    leaves none (a killed runner's iterations never finish in the log)."""
    if event.type is EventType.LOOP_STARTED or ends_the_loop(event):
        return frozenset()
    if event.type is EventType.ITERATION_STARTED:
        return in_flight | {event.iter}
    if event.type is EventType.ITERATION_FINISHED:
        return in_flight - {event.iter}
    return in_flight


def followed_text(
    in_flight: frozenset[int], event: Event
) -> tuple[frozenset[int], tuple[str, ...]]:
    """`event_text`, with each line of an iteration's agent and guard tagged `[iter=N node=X]`
    while more than one iteration is in flight (so a one-slot run's lines never change); and
    the iterations in flight after it."""
    after = in_flight_after(in_flight, event)
    lines = event_text(event)
    if len(after) < 2 or event.type not in _UNNAMED:
        return after, lines
    tag = f"[iter={event.iter} node={event.node_id}]"
    return after, tuple(f"  {tag} {line.removeprefix('  ')}" for line in lines)


def running_lines(journal: Journal, now: datetime, tail: tuple[str, ...]) -> tuple[str, ...]:
    """`runner status` for an iteration in progress: how long it has run, its log's last lines."""
    started = datetime.fromisoformat(journal.started_at.replace("Z", "+00:00"))
    elapsed = max(int((now - started).total_seconds()), 0)
    head = (
        f"running: iter={journal.iteration} node={journal.node_id} role={journal.role} "
        f"phase={journal.phase.value} elapsed={elapsed}s"
    )
    return (head, *(f"  | {line}" for line in tail[-STATUS_TAIL_LINES:]))
