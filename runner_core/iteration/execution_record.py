"""An iteration's record (meta.json): what it was, what it came to and what the shell measured.

Decides the record's fields from the node before the iteration, the outcome, the execution
counts and the measured times and usage: the execution number, the error kind, the attempts
before and after. Never reads a clock: the times arrive in `Measured`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from runner_core.guard.ratchet import TestFigures
from runner_core.history.records import ErrorKind, ExecutionRecord, TokenUsage
from runner_core.iteration.plan import IterationOutcome
from runner_core.tree.model import AgentRole, Node, nodes_by_id


@attrs.frozen(slots=True)
class Measured:
    """What the shell measured of an iteration, beside the core's outcome."""

    started_at: str
    ended_at: str
    duration_ms: int
    tokens: TokenUsage | None = None
    cost_usd: float | None = None


def execution_record(
    run_id: str,
    iteration: int,
    node: Node,
    role: AgentRole,
    outcome: IterationOutcome,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
    tests: TestFigures | None = None,
    merge_rerun: bool = False,
    merge_session: str | None = None,
    job_base: str | None = None,
    prompt_template: str | None = None,
) -> ExecutionRecord:
    """meta.json of the iteration; `node` is the selected node as it was before it."""
    return ExecutionRecord(
        run_id=run_id,
        node_id=node.id,
        execution=counts.get(node.id, 0) + 1,
        iteration=iteration,
        role=role,
        started_at=measured.started_at,
        ended_at=measured.ended_at,
        status=outcome.status,
        guard=outcome.guard,
        error_kind=_error_kind(outcome),
        error=outcome.runner_error if outcome.runner_error is not None else outcome.agent_error,
        tokens=measured.tokens,
        cost_usd=measured.cost_usd,
        duration_ms=measured.duration_ms,
        attempts_before=node.attempts,
        attempts_after=attempts_after(outcome.tree, node),
        backend=backend,
        tests=tests,
        merge_rerun=merge_rerun,
        merge_session=merge_session,
        job_base=job_base,
        prompt_template=prompt_template,
    )


def _error_kind(outcome: IterationOutcome) -> ErrorKind | None:
    return None if outcome.error_kind is None else ErrorKind(outcome.error_kind)


def attempts_after(tree: Node, node: Node) -> int:
    found = nodes_by_id(tree).get(node.id)
    return node.attempts if found is None else found.attempts
