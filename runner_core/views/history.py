"""What `runner history` shows: a run's iterations and operator commits, oldest first.

Decides which iterations and operator commits a `--node` filter keeps, the order they
interleave in, the `runner history --json` document and its table. Never reads a file: the
shell gathers the execution history and the operator commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from runner_core.history.records import (
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    record_to_meta,
)
from runner_core.iteration.recovery import shown_status
from runner_core.json_form import shaped
from runner_core.run.operator_actions import OperatorAction, action_text
from runner_core.views.layout import duration_text, table, tokens_text
from runner_core.views.text import flatten

# A record's error, as the ERROR column shows it.
ERROR_CHARS = 60


def history_records(history: ExecutionHistory, node_id: str | None) -> tuple[ExecutionRecord, ...]:
    """The iterations `runner history` lists: all, or one node's, in iteration order."""
    return history.records if node_id is None else history.records_for(node_id)


def history_actions(
    actions: Sequence[OperatorAction], node_id: str | None
) -> tuple[OperatorAction, ...]:
    """The operator commits `runner history` lists: all, or one node's."""
    return tuple(action for action in actions if node_id in (None, action.node_id))


def interleaved(
    records: Sequence[ExecutionRecord], actions: Sequence[OperatorAction]
) -> tuple[ExecutionRecord | OperatorAction, ...]:
    """Iterations and operator commits in the order they happened: an operator commit comes
    before the iteration that was next when it was made."""
    entries: list[ExecutionRecord | OperatorAction] = []
    pending = list(actions)
    for record in records:
        while pending and pending[0].before_iteration <= record.iteration:
            entries.append(pending.pop(0))
        entries.append(record)
    return (*entries, *pending)


def _error_text(record: ExecutionRecord) -> str:
    if record.error_kind is None:
        reason = None if record.tests is None else record.tests.reason_line()
        return "-" if reason is None else flatten(reason, ERROR_CHARS)
    return flatten(f"{record.error_kind.value}: {record.error or ''}", ERROR_CHARS)


def record_status(record: ExecutionRecord) -> str:
    """The word every view shows for an iteration: the agent's status (`merged` for a `done`
    whose conflicting files a merge session joined), or the kind of runner error
    (`runner_error`, `interrupted`, `rate_limited`, `conflict`); see `shown_status`."""
    if record.error_kind is not ErrorKind.RUNNER:
        kind = None if record.error_kind is None else record.error_kind.value
        return shown_status(record.status.value, kind, None, merge_session=record.merge_session)
    return shown_status(record.status.value, "runner", record.error, record.merge_rerun)


def _tests_text(record: ExecutionRecord) -> str:
    return "-" if record.tests is None else record.tests.cell()


def render_history(
    run_id: str,
    records: Sequence[ExecutionRecord],
    node: str | None,
    actions: Sequence[OperatorAction] = (),
) -> list[str]:
    which = f" node={node}" if node is not None else ""
    out = [f"history: run={run_id}{which} iterations={len(records)}"]
    if actions:
        out[0] += f" operator_actions={len(actions)}"
    if not records:
        return out + [f"  operator {action_text(action)}" for action in actions]
    headers = ("ITER", "NODE", "ROLE", "STATUS", "GUARD", "DURATION", "TOKENS in/out/cached")
    # The TESTS column appears once a guard has written a report (README, "Designing guards").
    tested = any(record.tests is not None for record in records)
    # The BACKEND column appears once a second backend ran an iteration (`[agent] fallback`).
    mixed = len({record.backend for record in records}) > 1
    # A StrEnum member is the text of its value: laid out as it is, without a `.value` lookup
    # (an enum property) per cell of a table that may run to tens of thousands of rows.
    rows = [
        (
            str(record.iteration),
            record.node_id,
            record.role,
            *((record.backend,) if mixed else ()),
            record_status(record),
            record.guard,
            *((_tests_text(record),) if tested else ()),
            duration_text(record.duration_ms),
            tokens_text(record.tokens),
            _error_text(record),
        )
        for record in records
    ]
    columns = (
        *headers[:3],
        *(("BACKEND",) if mixed else ()),
        *headers[3:5],
        *(("TESTS",) if tested else ()),
        *headers[5:],
        "ERROR",
    )
    header, *lines = table(columns, rows)
    by_record = {id(record): line for record, line in zip(records, lines, strict=True)}
    out.append(header)
    for entry in interleaved(records, actions):
        if isinstance(entry, OperatorAction):
            out.append(f"  operator {action_text(entry)}")
        else:
            out.append(by_record[id(entry)])
    return out


def _metas(records: Sequence[ExecutionRecord]) -> list[dict[str, Any]]:
    return [record_to_meta(record) for record in records]


@attrs.frozen(slots=True)
class HistoryDocument:
    """What `runner history --json` and `GET /api/history` show (schemas/views/history.schema.json):
    each iteration as its meta.json, the operator commits, and what was skipped."""

    run_id: str
    node: str | None
    records: tuple[ExecutionRecord, ...] = attrs.field(
        metadata=shaped(key="iterations", encode=_metas)
    )
    actions: tuple[OperatorAction, ...] = attrs.field(metadata=shaped(key="operator_actions"))
    problems: tuple[str, ...] = attrs.field(metadata=shaped(key="warnings"))
