"""Properties of the execution history: counts add up, numbering, determinism."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core.history.records import (
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    TokenUsage,
    history_summary_to_json,
    node_stats,
    record_from_meta,
    record_to_meta,
)
from runner_core.history.sources import merged_history, missing_iterations
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome
from runner_core.tree.state_update import TRANSITIONS
from tests.helpers.records import for_run, next_execution_number

SETTINGS = settings(max_examples=300, deadline=None)
MAX_ATTEMPTS = 3
START = datetime(2026, 1, 1, tzinfo=UTC)


@attrs.frozen(slots=True)
class Outcome:
    """What one iteration did, before it is numbered into a record."""

    status: AgentStatus
    guard: GuardOutcome
    error_kind: ErrorKind | None


OUTCOMES = (
    Outcome(AgentStatus.DONE, GuardOutcome.PASS, None),
    Outcome(AgentStatus.DONE, GuardOutcome.FAIL, None),
    Outcome(AgentStatus.DONE, GuardOutcome.SKIPPED, None),
    Outcome(AgentStatus.RETRY, GuardOutcome.SKIPPED, None),
    Outcome(AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED, None),
    Outcome(AgentStatus.RETRY, GuardOutcome.SKIPPED, ErrorKind.AGENT),
    Outcome(AgentStatus.RETRY, GuardOutcome.SKIPPED, ErrorKind.RUNNER),
)

node_ids = st.sampled_from(("root", "root.1", "root.2", "root.1.1"))
token_usages = st.none() | st.builds(
    TokenUsage,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
costs = st.none() | st.floats(0, 100, allow_nan=False, allow_infinity=False)


@st.composite
def iteration_steps(
    draw: st.DrawFn,
) -> tuple[str, str, Outcome, TokenUsage | None, float | None, int]:
    return (
        draw(st.sampled_from(("run-a", "run-b"))),
        draw(node_ids),
        draw(st.sampled_from(OUTCOMES)),
        draw(token_usages),
        draw(costs),
        draw(st.integers(0, 10**7)),
    )


def runs_of_records(
    steps: list[tuple[str, str, Outcome, TokenUsage | None, float | None, int]],
) -> list[ExecutionRecord]:
    """Records as the shell writes them: numbered by the history of their run, one by one."""
    histories: dict[str, ExecutionHistory] = {}
    records: list[ExecutionRecord] = []
    attempts: dict[str, int] = {}
    next_iter: dict[str, int] = {}
    for run_id, node_id, outcome, tokens, cost, duration_ms in steps:
        iteration = next_iter.get(run_id, 1)
        next_iter[run_id] = iteration + 1
        before = attempts.get(node_id, 0)
        increments = TRANSITIONS[(outcome.status, outcome.guard)].increments_attempts
        counts = increments and outcome.error_kind is not ErrorKind.RUNNER
        after = before + 1 if counts and before < MAX_ATTEMPTS else before
        attempts[node_id] = after
        history = histories.get(run_id, ExecutionHistory())
        started = START + timedelta(seconds=iteration)
        entry = ExecutionRecord(
            run_id=run_id,
            node_id=node_id,
            execution=next_execution_number(history, node_id),
            iteration=iteration,
            role=(
                AgentRole.DECOMPOSER
                if outcome.status is AgentStatus.DECOMPOSED
                else AgentRole.EXECUTOR
            ),
            started_at=started.isoformat(),
            ended_at=(started + timedelta(milliseconds=duration_ms)).isoformat(),
            status=outcome.status,
            guard=outcome.guard,
            error_kind=outcome.error_kind,
            error=None if outcome.error_kind is None else f"{outcome.error_kind.value} error",
            tokens=tokens,
            cost_usd=cost,
            duration_ms=duration_ms,
            attempts_before=before,
            attempts_after=after,
            backend="command",
        )
        histories[run_id] = ExecutionHistory.of((*history.records, entry))
        records.append(entry)
    return records


record_lists = st.lists(iteration_steps(), max_size=30).map(runs_of_records)


@SETTINGS
@given(record_lists)
def test_summary_counts_add_up(records: list[ExecutionRecord]) -> None:
    """successful + failed == total; runner + agent errors <= failed; guard pass + fail <= total;
    every node in the execution order is counted once in nodes_executed."""
    summary = ExecutionHistory.of(records).summary()
    assert summary.successful_executions + summary.failed_executions == summary.total_executions
    assert summary.runner_errors + summary.agent_errors <= summary.failed_executions
    assert summary.guard_passes + summary.guard_failures <= summary.total_executions
    assert summary.attempts_consumed <= summary.total_executions
    assert summary.nodes_executed == len(set(summary.execution_order))
    assert len(summary.execution_order) == summary.total_executions
    assert 0.0 <= summary.success_rate <= 1.0


@SETTINGS
@given(record_lists)
def test_node_stats_add_up_to_the_summary(records: list[ExecutionRecord]) -> None:
    """The per-node table partitions the history: its executions, attempts, durations and
    tokens sum to the summary's totals, one row per executed node."""
    history = ExecutionHistory.of(records)
    summary, rows = history.summary(), node_stats(history)
    assert len(rows) == summary.nodes_executed
    assert sum(row.executions for row in rows) == summary.total_executions
    assert sum(row.successful_executions for row in rows) == summary.successful_executions
    assert sum(row.attempts_consumed for row in rows) == summary.attempts_consumed
    assert sum(row.total_duration_ms for row in rows) / 1000 == summary.total_duration
    assert sum((row.tokens for row in rows), TokenUsage()) == summary.total_tokens


@SETTINGS
@given(record_lists)
def test_execution_numbers_are_one_to_k_per_node_in_iteration_order(
    records: list[ExecutionRecord],
) -> None:
    """Numbered by `next_execution_number` of their run's history, each node's records in a
    run carry 1..k in iteration order, and the next number that run hands out is k + 1."""
    history = ExecutionHistory.of(records)
    for run_id in history.run_ids():
        run = for_run(history, run_id)
        for node_id in run.node_ids():
            numbers = [entry.execution for entry in run.records_for(node_id)]
            assert numbers == list(range(1, len(numbers) + 1))
            assert next_execution_number(run, node_id) == len(numbers) + 1


@SETTINGS
@given(record_lists.flatmap(lambda records: st.tuples(st.just(records), st.permutations(records))))
def test_history_from_shuffled_records_is_identical(
    pair: tuple[list[ExecutionRecord], list[ExecutionRecord]],
) -> None:
    """The order records are read in (e.g. a directory listing) never shows: the history,
    its summary and its summary JSON text are the same for any permutation."""
    ordered, shuffled = pair
    first, second = ExecutionHistory.of(ordered), ExecutionHistory.of(shuffled)
    assert first == second
    assert first.summary() == second.summary()
    assert json.dumps(history_summary_to_json(first.summary())) == json.dumps(
        history_summary_to_json(second.summary())
    )
    assert node_stats(first) == node_stats(second)


@st.composite
def any_records(draw: st.DrawFn) -> ExecutionRecord:
    outcome = draw(st.sampled_from(OUTCOMES))
    before = draw(st.integers(0, 50))
    started = draw(st.datetimes(timezones=st.just(UTC)))
    return ExecutionRecord(
        run_id=draw(st.text(min_size=1)),
        node_id=draw(st.text(min_size=1)),
        execution=draw(st.integers(1, 10**6)),
        iteration=draw(st.integers(1, 10**6)),
        role=draw(st.sampled_from(AgentRole)),
        started_at=started.isoformat(),
        ended_at=draw(st.datetimes(timezones=st.just(UTC))).isoformat(),
        status=outcome.status,
        guard=outcome.guard,
        error_kind=outcome.error_kind,
        error=None if outcome.error_kind is None else draw(st.text()),
        tokens=draw(token_usages),
        cost_usd=draw(costs),
        duration_ms=draw(st.integers(0, 10**9)),
        attempts_before=before,
        attempts_after=before + draw(st.integers(0, 1)),
        backend=draw(st.text(min_size=1)),
    )


@SETTINGS
@given(any_records())
def test_record_round_trips_through_meta_json(entry: ExecutionRecord) -> None:
    """record_from_meta(json(record_to_meta(r))) == r, and the meta reads back unchanged."""
    meta = record_to_meta(entry)
    text = json.dumps(meta, ensure_ascii=False)
    assert record_from_meta(json.loads(text)) == entry
    assert record_to_meta(record_from_meta(meta)) == meta


@given(record_lists, st.lists(st.booleans(), max_size=30), st.lists(st.booleans(), max_size=30))
def test_a_history_merged_from_partial_sources_counts_every_iteration_once(
    records: list[ExecutionRecord], local: list[bool], archived: list[bool]
) -> None:
    """Whichever iterations the directories and the archive hold, merged before the trailers
    (which hold them all) the history is the whole run: no iteration lost, none counted twice."""
    dirs = [r for r, keep in zip(records, local, strict=False) if keep]
    archive = [r for r, keep in zip(records, archived, strict=False) if keep]
    merged = merged_history(dirs, archive, records)
    assert merged == ExecutionHistory.of(records)
    for run_id in merged.run_ids():
        next_iter = 1 + sum(1 for r in records if r.run_id == run_id)
        assert missing_iterations(merged, run_id, next_iter) == ()
