"""A concise builder of execution records, shared by the history and report tests."""

from __future__ import annotations

from typing import Any

import attrs

from runner_core.history.records import ExecutionRecord
from runner_core.iteration.state_update import TRANSITIONS
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome


def record(
    iteration: int,
    node_id: str = "root.1",
    status: AgentStatus = AgentStatus.DONE,
    guard: GuardOutcome = GuardOutcome.PASS,
    run_id: str = "run-1",
    **changes: Any,
) -> ExecutionRecord:
    """A record of one iteration; attempts follow seed 000's table unless `changes` say else."""
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
