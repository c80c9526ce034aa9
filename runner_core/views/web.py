"""What `runner serve`'s page shows beyond the terminal views' documents.

Decides the overview's one-word run state (from a `runner status --json` document and the
loop's last events), the wait a live loop is sleeping through, a node's detail (goal,
acceptance, path, its executions), the tokens and cost rolled up over each subtree, and what
changed on the page between two readings of the documents (the `view` event). Never
reads a file, a socket or the clock: the shell hands in the tree, the history, the status
document, the last events and the clock reading, and serves what these functions return.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from runner_core.history.records import ExecutionHistory, ExecutionRecord
from runner_core.json_form import json_form
from runner_core.loop.budget import rolled_up_totals
from runner_core.loop.events import Event, EventType
from runner_core.tree.model import Node, canonical_preorder
from runner_core.views.charts import record_reason
from runner_core.views.history import record_status

# The overview's run states, in the order they are decided.
RUN_STATES = (
    "not-started",
    "running",
    "interrupted",
    "waiting",
    "complete",
    "budget",
    "stuck",
    "limit",
    "idle",
)


@attrs.frozen(slots=True)
class LoopFacts:
    """What the shell sees beside the status document: whether a runner holds the repository's
    lock, the last events of the run's `events.jsonl` (oldest first) and the time they are read."""

    alive: bool = False
    events: tuple[Event, ...] = ()
    read_at: datetime | None = None


# No runner at work and no events read: the page before `runner loop`, and the tests' default.
NO_LOOP = LoopFacts()


def current_wait(loop: LoopFacts) -> Event | None:
    """The `waiting` event a live loop is sleeping through: the last one with no iteration
    started after it, while its `until` is still ahead of the clock reading `read_at`."""
    if not loop.alive or loop.read_at is None:
        return None
    for event in reversed(loop.events):
        if event.type is EventType.ITERATION_STARTED:
            return None
        if event.type is EventType.WAITING:
            until = datetime.fromisoformat(str(event.figures["until"]).replace("Z", "+00:00"))
            return event if until > loop.read_at else None
    return None


def run_state_word(status: Mapping[str, Any], loop: LoopFacts = NO_LOOP) -> str:
    """One word for where a run stands, from its `runner status --json` document.

    An agent at work beats everything; a dead runner's iteration is `interrupted`; a live loop
    sleeping out a wait is `waiting`; then the tree decides `complete`, a reached budget
    `budget`, a stuck leaf `stuck`, the iteration limit `limit`; otherwise a live runner is
    between two iterations (`running`) or no runner is at work and `runner loop` goes on (`idle`).
    """
    if status["run"] == "not-started":
        return "not-started"
    if status["running"] is not None:
        return "running"
    if status["interrupted"] is not None:
        return "interrupted"
    if current_wait(loop) is not None:
        return "waiting"
    selection = status["selected"]["status"]
    if selection == "complete":
        return "complete"
    if any(use["exhausted"] for use in status["budgets"]):
        return "budget"
    if selection == "stuck":
        return "stuck"
    if status["next_iteration"] > status["max_iterations"]:
        return "limit"
    return "running" if loop.alive else "idle"


def _execution_json(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "iteration": record.iteration,
        "execution": record.execution,
        "role": record.role.value,
        "status": record.status.value,
        "shown_status": record_status(record),  # the word every view shows
        "guard": record.guard.value,
        "backend": record.backend,
        "duration_ms": record.duration_ms,
        "tokens": json_form(record.tokens),
        "cost_usd": record.cost_usd,
        # Why it did not pass: its error, else the ratchet's reasons (never empty for a fail).
        "error": record_reason(record),
    }


def node_detail(tree: Node, history: ExecutionHistory, node_id: str) -> dict[str, Any] | None:
    """The page's node panel: goal, acceptance, path and executions; None for an unknown id."""
    for node, path, _ in canonical_preorder(tree):
        if node.id == node_id:
            return {
                "id": node.id,
                "title": node.title,
                "path": path,
                "goal": node.goal,
                "acceptance": list(node.acceptance),
                "attempts": node.attempts,
                "max_attempts": node.max_attempts,
                "executions": [_execution_json(r) for r in history.records_for(node_id)],
            }
    return None


def rollups(tree: Node, history: ExecutionHistory) -> dict[str, dict[str, Any]]:
    """Each node's tokens and cost summed over its subtree (budget.rolled_up_totals), by id."""
    shown = {}
    for node_id, total in rolled_up_totals(tree, history).items():
        figures = json_form(total)
        shown[node_id] = {"tokens": figures["tokens"], "cost_usd": figures["cost_usd"]}
    return shown


def _wait_json(event: Event | None) -> dict[str, Any] | None:
    if event is None:
        return None
    return {key: event.figures[key] for key in ("reason", "until", "secs")}


def fallbacks(events: tuple[Event, ...]) -> list[dict[str, Any]]:
    """The `fallback` events among `events`, oldest first: the iteration whose backend hit its
    limit, that backend, the one the loop switched to and when the limit ends."""
    return [
        {"iter": event.iter, **{key: event.figures[key] for key in ("backend", "to", "until")}}
        for event in events
        if event.type is EventType.FALLBACK
    ]


def overview_to_json(
    status: Mapping[str, Any], tree: Node, history: ExecutionHistory, loop: LoopFacts = NO_LOOP
) -> dict[str, Any]:
    """`GET /api/overview` (schemas/views/overview.schema.json): the run state word, the
    iteration to show (the running one, else the last one done), the wait a live loop is in,
    the backend switches among the last events and the rolled-up figures of every node."""
    running = status["running"]
    iteration = running["iteration"] if running is not None else status["next_iteration"] - 1
    return {
        "state": run_state_word(status, loop),
        "iteration": iteration,
        "loop_alive": loop.alive,
        "wait": _wait_json(current_wait(loop)),
        "fallbacks": fallbacks(loop.events),
        "rollups": rollups(tree, history),
    }


# ---------------------------------------------------------------- live updates

# The status document's keys the tree rows carry; the rest is the page's head.
_TREE_KEYS = ("tree", "removed")


@attrs.frozen(slots=True)
class PageView:
    """What the page shows live: its head (the status document without the tree, and the
    overview without the roll-ups) and each tree row with its subtree's roll-up, in canonical
    order. Built from the documents the API serves, so a delta never says anything they don't."""

    head: Mapping[str, Any]
    rows: tuple[Mapping[str, Any], ...]


def page_view(status: Mapping[str, Any], overview: Mapping[str, Any]) -> PageView:
    """The page view of a `runner status --json` document and its `/api/overview`."""
    head = {
        "status": {key: value for key, value in status.items() if key not in _TREE_KEYS},
        "overview": {key: value for key, value in overview.items() if key != "rollups"},
    }
    rollups_by_id = overview["rollups"]
    rows = tuple({**row, "rollup": rollups_by_id.get(row["id"])} for row in status["tree"])
    return PageView(head, rows)


def _shape(view: PageView) -> list[tuple[str, int]]:
    return [(row["id"], row["depth"]) for row in view.rows]


def view_delta(before: PageView | None, after: PageView) -> dict[str, Any] | None:
    """The `view` event from one page view to the next; None when nothing changed.

    `head` is the new head when it changed (else null); `rows` are the rows that changed, whole;
    `reshaped` says nodes were added, removed or moved, and then the page reads the documents
    afresh instead (rows is empty). Values are whole, never differences, so applying a delta
    twice or late leaves the page where the latest one does.
    """
    if before is None:
        return None
    if before == after:
        return None
    if _shape(before) != _shape(after):
        return {"head": after.head, "rows": [], "reshaped": True}
    changed = [new for old, new in zip(before.rows, after.rows, strict=True) if old != new]
    head = after.head if after.head != before.head else None
    return {"head": head, "rows": changed, "reshaped": False}
