"""What a person watching a night's run reads: `runner follow` lines and `runner status` extras.

Decides the text line of each event (the `loop:` lines of `runner loop` plus agent and guard
progress), the running iteration's lines (elapsed time, last lines of its log) and the budget
lines (spent vs limit). Never reads files or the clock: the shell passes events, the journal,
the times and the log's last lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from runner_core.iteration.recovery import Journal
from runner_core.loop.budget import BudgetUse, NodeTotals, figure_text
from runner_core.loop.events import Event, EventType
from runner_core.views.loop_lines import budget_fields, spent_fields, status_line, waiting_line

# How many of the running process's last log lines `runner status` shows.
STATUS_TAIL_LINES = 5


def step_line(
    prefix: str, run_id: str, iteration: int, node_id: str, status: str, guard: str
) -> str:
    """The line of an iteration done: `runner step`'s (`step:`), `runner loop`'s and `runner
    follow`'s (`loop: step`), from the step's result or its `iteration_finished` event alike."""
    return f"{prefix} run={run_id} iter={iteration} node={node_id} status={status} guard={guard}"


def _step(event: Event, f: Mapping[str, Any]) -> str:
    meta = f["meta"]
    node_id = str(event.node_id)
    return step_line("loop: step", event.run_id, event.iter, node_id, meta["status"], meta["guard"])


def _secs(milliseconds: int) -> str:
    return f"{milliseconds / 1000:.1f}s"


_LINES: Mapping[EventType, Callable[[Event, Mapping[str, Any]], str]] = MappingProxyType(
    {
        EventType.ITERATION_STARTED: lambda e, f: (
            f"iter {e.iter} node={e.node_id} role={f['role']} "
            f"attempts={f['attempts']}/{f['max_attempts']}"
        ),
        EventType.AGENT_STARTED: lambda e, f: f"  agent started: {f['backend']} ({f['role']})",
        EventType.AGENT_FINISHED: lambda e, f: (
            f"  agent finished: exit={f['exit_code']} after {_secs(f['duration_ms'])}"
        ),
        EventType.GUARD_STARTED: lambda e, f: f"  guard started: {' '.join(f['argv'])}",
        EventType.GUARD_FINISHED: lambda e, f: (
            f"  guard finished: {f['outcome']} exit={f['exit_code']} "
            f"after {_secs(f['duration_ms'])}"
        ),
        EventType.ITERATION_FINISHED: _step,
        EventType.WAITING: lambda e, f: waiting_line(e.run_id, f["reason"], f["until"], f["secs"]),
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


def running_lines(journal: Journal, now: datetime, tail: tuple[str, ...]) -> tuple[str, ...]:
    """`runner status` for an iteration in progress: how long it has run, its log's last lines."""
    started = datetime.fromisoformat(journal.started_at.replace("Z", "+00:00"))
    elapsed = max(int((now - started).total_seconds()), 0)
    head = (
        f"running: iter={journal.iteration} node={journal.node_id} role={journal.role} "
        f"phase={journal.phase.value} elapsed={elapsed}s"
    )
    return (head, *(f"  | {line}" for line in tail[-STATUS_TAIL_LINES:]))


def budget_lines(uses: tuple[BudgetUse, ...]) -> tuple[str, ...]:
    """`runner status` and `report`: each configured budget, spent vs limit."""
    return tuple(
        f"budget: {use.budget} {spent_fields(use)}" + (" (reached)" if use.exhausted else "")
        for use in uses
    )


def rolled_up_lines(subtree_totals: tuple[NodeTotals, ...]) -> tuple[str, ...]:
    """`runner report`'s per-node figures rolled up the tree: a parent's include its subtree's."""
    rows = []
    for totals in subtree_totals:
        cost = "-" if totals.cost_usd is None else figure_text(totals.cost_usd)
        tokens = totals.tokens.input + totals.tokens.output
        rows.append(
            f"  {totals.node_id} executions={totals.executions} "
            f"attempts={totals.attempts_consumed} duration={_secs(totals.duration_ms)} "
            f"tokens={tokens} cost_usd={cost}"
        )
    return ("subtree totals:", *rows)
