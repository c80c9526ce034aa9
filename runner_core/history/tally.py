"""What a history's records sum to for its summary, kept as integers and the costs and node
ids in record order: a history extended by a few records sums only those
(`runner_core.history.records.summarize` reads its summary from a tally). Never reads a file:
the records are handed in.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from runner_core.history.execution import ErrorKind, ExecutionRecord, TokenUsage
from runner_core.tree.model import GuardOutcome


def sum_tokens(records: Iterable[ExecutionRecord]) -> TokenUsage:
    # Summed as plain integers: one TokenUsage, not one per record, for the same total.
    spent, produced, cached = 0, 0, 0
    for record in records:
        tokens = record.tokens
        if tokens is not None:
            spent += tokens.input
            produced += tokens.output
            cached += tokens.cached
    return TokenUsage(spent, produced, cached)


@attrs.frozen(slots=True)
class Tally:
    """What records sum to, as the summary needs it: integers, and the costs and node ids in
    record order, so that records added after are summed alone (`plus`)."""

    executions: int = 0
    successful: int = 0
    duration_ms: int = 0
    tokens: tuple[int, int, int] = (0, 0, 0)
    attempts_consumed: int = 0
    runner_errors: int = 0
    agent_errors: int = 0
    guard_passes: int = 0
    guard_failures: int = 0
    costs: tuple[float, ...] = ()
    execution_order: tuple[str, ...] = ()
    reruns: tuple[ExecutionRecord, ...] = ()

    @staticmethod
    def of(records: tuple[ExecutionRecord, ...]) -> Tally:
        return Tally().plus(records)

    def plus(self, records: tuple[ExecutionRecord, ...]) -> Tally:
        counts = [0] * 6  # successful, attempts, runner and agent errors, passes, failures
        for record in records:
            counts[0] += record.successful
            counts[1] += record.consumed_attempt
            counts[2] += record.error_kind is ErrorKind.RUNNER
            counts[3] += record.error_kind is ErrorKind.AGENT
            counts[4] += record.guard is GuardOutcome.PASS
            counts[5] += record.guard is GuardOutcome.FAIL
        tokens = sum_tokens(records)
        spent, produced, cached = self.tokens
        return Tally(
            executions=self.executions + len(records),
            successful=self.successful + counts[0],
            duration_ms=self.duration_ms + sum(record.duration_ms for record in records),
            tokens=(spent + tokens.input, produced + tokens.output, cached + tokens.cached),
            attempts_consumed=self.attempts_consumed + counts[1],
            runner_errors=self.runner_errors + counts[2],
            agent_errors=self.agent_errors + counts[3],
            guard_passes=self.guard_passes + counts[4],
            guard_failures=self.guard_failures + counts[5],
            costs=self.costs + tuple(r.cost_usd for r in records if r.cost_usd is not None),
            execution_order=self.execution_order + tuple(r.node_id for r in records),
            reruns=self.reruns + tuple(record for record in records if record.merge_rerun),
        )
