"""A concise builder of execution records, shared by the history and report tests."""

from __future__ import annotations

from typing import Any

import attrs

from runner_core.history.records import ExecutionHistory, ExecutionRecord
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome
from runner_core.tree.state_update import TRANSITIONS


def record(
    iteration: int,
    node_id: str = "root.1",
    status: AgentStatus = AgentStatus.DONE,
    guard: GuardOutcome = GuardOutcome.PASS,
    run_id: str = "run-1",
    **changes: Any,
) -> ExecutionRecord:
    """A record of one iteration; attempts follow the transition table unless `changes` say else."""
    decomposing = status is AgentStatus.DECOMPOSED
    base = ExecutionRecord(
        run_id=run_id,
        node_id=node_id,
        execution=1,
        iteration=iteration,
        role=AgentRole.DECOMPOSER if decomposing else AgentRole.EXECUTOR,
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:00:01Z",
        status=status,
        guard=guard,
        error_kind=None,
        error=None,
        tokens=None,
        cost_usd=None,
        duration_ms=1000,
        attempts_before=0,
        attempts_after=1 if TRANSITIONS[(status, guard)].increments_attempts else 0,
        backend="command",
    )
    return attrs.evolve(base, **changes)


def for_run(history: ExecutionHistory, run_id: str) -> ExecutionHistory:
    """The records of one run, still in iteration order."""
    return ExecutionHistory(tuple(entry for entry in history.records if entry.run_id == run_id))


def iterations_of(history: ExecutionHistory, node_id: str) -> tuple[int, ...]:
    """The iterations that executed `node_id`, in order."""
    return tuple(entry.iteration for entry in history.records_for(node_id))


def next_execution_number(history: ExecutionHistory, node_id: str) -> int:
    """The number the machine gives the node's next execution: one more than it has had."""
    return history.execution_count(node_id) + 1
