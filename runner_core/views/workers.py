"""`runner workers`: the workers polling a Temporal task queue, as lines and as `--json`.

Decides what the command prints for the workers the server reported (identity and when it
last heard each, UTC), and the line for none. Never asks the server: runner_shell does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import attrs

from runner_core.json_form import shaped
from runner_core.views.text import terminal_text

WorkerRow = tuple[str, datetime]


def utc_text(moment: datetime) -> str:
    """`2026-01-02T03:04:05Z`: a moment in UTC to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def worker_lines(address: str, task_queue: str, workers: Sequence[WorkerRow]) -> tuple[str, ...]:
    """One line per worker, `IDENTITY  last seen <utc>`, or the line saying there is none."""
    if not workers:
        return (f"workers: none polling task queue {task_queue} on {address}",)
    # A worker names itself: its identity is escaped like any text from outside.
    return tuple(
        f"{terminal_text(identity)}  last seen {utc_text(seen)}" for identity, seen in workers
    )


def _workers_json(workers: Sequence[WorkerRow]) -> list[dict[str, str]]:
    return [{"identity": identity, "last_seen": utc_text(seen)} for identity, seen in workers]


@attrs.frozen(slots=True)
class WorkersDocument:
    """`runner workers --json` (schemas/views/workers.schema.json)."""

    address: str
    namespace: str
    task_queue: str
    workers: tuple[WorkerRow, ...] = attrs.field(metadata=shaped(encode=_workers_json))
