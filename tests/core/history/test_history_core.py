"""Execution history: records, summaries, per-node table, display states."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runner_core.history.records import (
    META_FIELDS,
    DamagedRecord,
    DuplicateIteration,
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    NodeDisplayState,
    TokenUsage,
    display_states,
    history_summary_to_json,
    most_retried,
    node_stats,
    record_from_meta,
    record_to_meta,
    slowest,
)
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome, Node, NodeNext
from tests.helpers.records import for_run, iterations_of, next_execution_number, record

DONE, RETRY, DECOMPOSED = AgentStatus.DONE, AgentStatus.RETRY, AgentStatus.DECOMPOSED
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED
State = NodeDisplayState

META_EXAMPLE: dict[str, Any] = {
    "run_id": "run-abc12345",
    "iter": 3,
    "node_id": "root.1",
    "role": "executor",
    "status": "retry",
    "guard": "skipped",
    "execution": 2,
    "started_at": "2026-11-22T00:00:00.123Z",
    "ended_at": "2026-11-22T00:00:04.567Z",
    "duration_ms": 4444,
    "error_kind": "agent",
    "error": "immutability failed: passed node 'a' changed in next tree",
    "tokens": {"input": 100, "output": 20, "cached": 5},
    "cost_usd": 0.0123,
    "attempts_before": 0,
    "attempts_after": 1,
    "backend": "command",
}


def agent_error(iteration: int, node_id: str = "root.1") -> ExecutionRecord:
    return record(
        iteration, node_id, RETRY, SKIPPED, error_kind=ErrorKind.AGENT, error="tree invalid"
    )


def runner_error(iteration: int, node_id: str = "root.1") -> ExecutionRecord:
    return record(
        iteration,
        node_id,
        RETRY,
        SKIPPED,
        error_kind=ErrorKind.RUNNER,
        error="agent timed out",
        attempts_after=0,
    )


def node(
    node_id: str,
    *children: Node,
    passes: bool = False,
    attempts: int = 0,
    max_attempts: int = 3,
    order: int = 0,
) -> Node:
    return Node(
        node_id,
        order,
        f"title {node_id}",
        f"goal {node_id}",
        (),
        NodeNext.EXECUTE,
        passes,
        attempts,
        max_attempts,
        children,
    )


def history(*records: ExecutionRecord) -> ExecutionHistory:
    return ExecutionHistory.of(records)


# ---------------------------------------------------------------- records


def test_token_usages_add_field_by_field() -> None:
    assert TokenUsage(1, 2, 3) + TokenUsage(10, 20, 30) == TokenUsage(11, 22, 33)


@pytest.mark.parametrize(
    ("status", "guard", "error", "successful"),
    [
        (DONE, PASS, None, True),
        (DONE, FAIL, None, False),
        (DONE, SKIPPED, None, False),
        (RETRY, SKIPPED, None, False),
        (RETRY, SKIPPED, "tree invalid", False),
        (DECOMPOSED, SKIPPED, None, True),
        (DECOMPOSED, SKIPPED, "decomposer returned no children", False),
    ],
)
def test_a_record_is_successful_only_when_done_and_passing_or_cleanly_decomposed(
    status: AgentStatus, guard: GuardOutcome, error: str | None, successful: bool
) -> None:
    kind = ErrorKind.AGENT if error else None
    entry = record(1, status=status, guard=guard, error=error, error_kind=kind)
    assert entry.successful is successful
    assert entry.failed is not successful


def test_a_record_consumed_an_attempt_when_attempts_grew() -> None:
    assert agent_error(1).consumed_attempt
    assert not runner_error(1).consumed_attempt
    assert not record(1).consumed_attempt


# ---------------------------------------------------------------- meta.json


def test_record_from_meta_reads_every_field() -> None:
    entry = record_from_meta(META_EXAMPLE)
    assert entry == ExecutionRecord(
        run_id="run-abc12345",
        node_id="root.1",
        execution=2,
        iteration=3,
        role=AgentRole.EXECUTOR,
        started_at="2026-11-22T00:00:00.123Z",
        ended_at="2026-11-22T00:00:04.567Z",
        status=RETRY,
        guard=SKIPPED,
        error_kind=ErrorKind.AGENT,
        error="immutability failed: passed node 'a' changed in next tree",
        tokens=TokenUsage(100, 20, 5),
        cost_usd=0.0123,
        duration_ms=4444,
        attempts_before=0,
        attempts_after=1,
        backend="command",
    )


def test_record_to_meta_gives_back_the_meta_it_was_read_from_in_key_order() -> None:
    meta = record_to_meta(record_from_meta(META_EXAMPLE))
    assert meta == META_EXAMPLE
    assert tuple(meta) == META_FIELDS


def test_record_round_trips_with_nulls() -> None:
    entry = record(4, tokens=None, cost_usd=None)
    assert record_from_meta(record_to_meta(entry)) == entry
    assert record_to_meta(entry)["tokens"] is None


def test_record_from_meta_ignores_keys_it_does_not_know() -> None:
    meta = {**META_EXAMPLE, "summary": "something the shell added"}
    assert record_from_meta(meta) == record_from_meta(META_EXAMPLE)


def test_record_from_meta_reads_an_integer_cost_as_a_float() -> None:
    entry = record_from_meta({**META_EXAMPLE, "cost_usd": 2})
    assert entry.cost_usd == 2.0
    assert isinstance(entry.cost_usd, float)


@pytest.mark.parametrize("field", META_FIELDS)
def test_damaged_meta_names_the_missing_field(field: str) -> None:
    meta = {key: value for key, value in META_EXAMPLE.items() if key != field}
    with pytest.raises(DamagedRecord) as caught:
        record_from_meta(meta)
    assert caught.value.field == field
    assert str(caught.value) == f"{field}: missing"


@pytest.mark.parametrize("field", ["input", "output", "cached"])
def test_damaged_meta_names_the_missing_token_count(field: str) -> None:
    meta = copy.deepcopy(META_EXAMPLE)
    del meta["tokens"][field]
    with pytest.raises(DamagedRecord, match=f"^tokens.{field}: missing$"):
        record_from_meta(meta)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("run_id", 7, "run_id"),
        ("run_id", "", "run_id"),
        ("iter", "3", "iter"),
        ("iter", 0, "iter"),
        ("iter", True, "iter"),
        ("node_id", None, "node_id"),
        ("role", "planner", "role"),
        ("status", "passed", "status"),
        ("guard", "pass", "guard"),
        ("execution", 0, "execution"),
        ("started_at", None, "started_at"),
        ("ended_at", "yesterday", "ended_at"),
        ("duration_ms", -1, "duration_ms"),
        ("duration_ms", 1.5, "duration_ms"),
        ("error_kind", "user", "error_kind"),
        ("error_kind", None, "error_kind"),
        ("error", None, "error"),
        ("error", 12, "error"),
        ("tokens", [1, 2, 3], "tokens"),
        ("tokens", {"input": -1, "output": 0, "cached": 0}, "tokens.input"),
        ("cost_usd", -0.5, "cost_usd"),
        ("cost_usd", "0.1", "cost_usd"),
        ("cost_usd", False, "cost_usd"),
        ("attempts_before", -1, "attempts_before"),
        ("attempts_after", 2, "attempts_after"),
        ("backend", None, "backend"),
    ],
)
def test_damaged_meta_names_the_wrong_typed_field(field: str, value: Any, named: str) -> None:
    with pytest.raises(DamagedRecord) as caught:
        record_from_meta({**META_EXAMPLE, field: value})
    assert caught.value.field == named
    assert str(caught.value).startswith(f"{named}: ")


def test_damaged_meta_that_is_not_an_object_says_so() -> None:
    with pytest.raises(DamagedRecord, match=r"^meta\.json: must be a JSON object, got list$"):
        record_from_meta([META_EXAMPLE])


# ---------------------------------------------------------------- building a history


def test_history_of_sorts_records_by_run_then_iteration() -> None:
    late, early, other_run = record(5), record(2), record(1, run_id="run-0")
    assert history(late, early, other_run).records == (other_run, early, late)


def test_history_rejects_an_iteration_recorded_twice() -> None:
    with pytest.raises(DuplicateIteration, match=r"^iteration 2 of run 'run-1' is recorded twice$"):
        history(record(2), record(2, node_id="root.2"))


def test_the_same_iteration_in_two_runs_is_not_a_duplicate() -> None:
    assert len(history(record(1), record(1, run_id="run-2"))) == 2


def test_history_constructor_rejects_unsorted_records() -> None:
    with pytest.raises(ValueError, match=r"sorted by \(run_id, iteration\)"):
        ExecutionHistory((record(2), record(1)))


def test_for_run_keeps_only_that_runs_records_and_its_own_numbering() -> None:
    other = record(1, run_id="run-0")
    mine = record(1)
    both = history(mine, other)
    assert both.run_ids() == ("run-0", "run-1")
    assert for_run(both, "run-1").records == (mine,)
    assert next_execution_number(both, "root.1") == 3
    assert next_execution_number(for_run(both, "run-1"), "root.1") == 2


# ---------------------------------------------------------------- per-node queries


def test_execution_count_counts_each_execution_of_the_node() -> None:
    past = history(agent_error(1), record(2, "root.2"), record(3))
    assert past.execution_count("root.1") == 2
    assert past.execution_count("root.2") == 1
    assert past.execution_count("never") == 0


def test_next_execution_number_is_one_more_than_the_count() -> None:
    past = history(agent_error(1), record(2, "root.2"), record(3))
    assert next_execution_number(past, "root.1") == 3
    assert next_execution_number(past, "never") == 1


def test_records_and_iterations_of_a_node_are_in_iteration_order() -> None:
    first, second = agent_error(4), record(9)
    past = history(second, record(6, "root.2"), first)
    assert past.records_for("root.1") == (first, second)
    assert iterations_of(past, "root.1") == (4, 9)
    assert past.records_for("never") == ()


def test_last_record_is_the_latest_execution_of_the_node() -> None:
    latest = record(7)
    assert history(latest, agent_error(3), record(5, "root.2")).last_record("root.1") == latest


def test_last_record_of_a_node_that_never_ran_is_none() -> None:
    assert history(record(1)).last_record("root.2") is None


# ---------------------------------------------------------------- summary


def test_empty_history_summary_is_all_zero() -> None:
    summary = ExecutionHistory().summary()
    assert history_summary_to_json(summary) == {
        "total_executions": 0,
        "successful_executions": 0,
        "failed_executions": 0,
        "success_rate": 0.0,
        "total_duration": 0.0,
        "total_tokens": {"input": 0, "output": 0, "cached": 0},
        "nodes_executed": 0,
        "execution_order": [],
        "attempts_consumed": 0,
        "runner_errors": 0,
        "agent_errors": 0,
        "guard_passes": 0,
        "guard_failures": 0,
        "total_cost_usd": None,
    }


def test_success_rate_of_an_empty_history_is_zero_not_a_division_error() -> None:
    assert ExecutionHistory().summary().success_rate == 0.0


def test_all_failed_history_has_zero_success_rate() -> None:
    summary = history(agent_error(1), record(2, guard=FAIL), runner_error(3)).summary()
    assert summary.total_executions == 3
    assert summary.successful_executions == 0
    assert summary.failed_executions == 3
    assert summary.success_rate == 0.0


def test_success_rate_is_successful_over_total() -> None:
    summary = history(record(1), agent_error(2), record(3, "root.2", DECOMPOSED, SKIPPED)).summary()
    assert summary.success_rate == pytest.approx(2 / 3)


def test_token_totals_add_every_reported_usage_and_skip_missing_ones() -> None:
    summary = history(
        record(1, tokens=TokenUsage(100, 20, 5)),
        record(2, "root.2", tokens=None),
        record(3, "root.3", tokens=TokenUsage(1, 2, 3)),
    ).summary()
    assert summary.total_tokens == TokenUsage(101, 22, 8)


def test_total_cost_is_none_when_no_record_reported_a_cost() -> None:
    assert history(record(1), record(2, "root.2")).summary().total_cost_usd is None


def test_total_cost_sums_the_reported_costs() -> None:
    summary = history(
        record(1, cost_usd=0.1), record(2, "root.2"), record(3, "root.3", cost_usd=0.2)
    ).summary()
    assert summary.total_cost_usd == pytest.approx(0.3)


def test_a_reported_zero_cost_is_zero_not_none() -> None:
    assert history(record(1, cost_usd=0.0)).summary().total_cost_usd == 0.0


def test_total_duration_is_in_seconds() -> None:
    summary = history(record(1, duration_ms=1500), record(2, "root.2", duration_ms=250)).summary()
    assert summary.total_duration == 1.75


def test_execution_order_repeats_nodes_and_nodes_executed_counts_them_once() -> None:
    summary = history(agent_error(1), record(2, "root.2"), record(3)).summary()
    assert summary.execution_order == ("root.1", "root.2", "root.1")
    assert summary.nodes_executed == 2


def test_summary_counts_errors_guards_and_consumed_attempts() -> None:
    summary = history(
        record(1),
        record(2, "root.2", guard=FAIL),
        agent_error(3, "root.2"),
        runner_error(4, "root.2"),
        record(5, "root.2"),
    ).summary()
    assert summary.guard_passes == 2
    assert summary.guard_failures == 1
    assert summary.agent_errors == 1
    assert summary.runner_errors == 1
    assert summary.attempts_consumed == 2


def test_summary_json_keys_are_seed_004_first_then_the_runners() -> None:
    keys = tuple(history_summary_to_json(history(record(1)).summary()))
    assert keys == (
        "total_executions",
        "successful_executions",
        "failed_executions",
        "success_rate",
        "total_duration",
        "total_tokens",
        "nodes_executed",
        "execution_order",
        "attempts_consumed",
        "runner_errors",
        "agent_errors",
        "guard_passes",
        "guard_failures",
        "total_cost_usd",
    )


# ---------------------------------------------------------------- per-node table


def test_node_stats_has_one_row_per_node_sorted_by_id() -> None:
    rows = node_stats(
        history(
            record(1, "b", DECOMPOSED, SKIPPED, duration_ms=10),
            agent_error(2, "a"),
            record(3, "a", duration_ms=30, tokens=TokenUsage(1, 1, 1)),
        )
    )
    assert [row.node_id for row in rows] == ["a", "b"]
    first = rows[0]
    assert (first.executions, first.successful_executions, first.failed_executions) == (2, 1, 1)
    assert first.attempts_consumed == 1
    assert first.total_duration_ms == 1030
    assert first.tokens == TokenUsage(1, 1, 1)
    assert (first.last_iteration, first.last_status, first.last_guard) == (3, DONE, PASS)


def test_slowest_orders_by_duration_descending_then_iteration() -> None:
    quick = record(1, "a", duration_ms=5)
    tied_late = record(4, "b", duration_ms=50)
    tied_early = record(2, "c", duration_ms=50)
    longest = record(3, "d", duration_ms=90)
    ranked = slowest(history(quick, tied_late, tied_early, longest), 3)
    assert ranked == (longest, tied_early, tied_late)


def test_most_retried_orders_by_attempts_consumed_then_node_id() -> None:
    past = history(
        agent_error(1, "c"),
        agent_error(2, "b"),
        agent_error(3, "b"),
        agent_error(4, "a"),
        record(5, "d"),
    )
    assert [row.node_id for row in most_retried(past, 10)] == ["b", "a", "c"]
    assert [row.node_id for row in most_retried(past, 2)] == ["b", "a"]


def test_most_retried_leaves_out_nodes_that_consumed_no_attempt() -> None:
    assert most_retried(history(record(1), runner_error(2, "b")), 5) == ()


def test_rankings_of_zero_are_empty_and_negative_counts_are_refused() -> None:
    past = history(agent_error(1))
    assert slowest(past, 0) == ()
    assert most_retried(past, 0) == ()
    with pytest.raises(ValueError, match="n must be >= 0"):
        slowest(past, -1)


# ---------------------------------------------------------------- display states


def test_the_node_of_the_iteration_in_progress_is_running() -> None:
    tree = node("root", node("a", passes=True), node("b", order=1))
    assert display_states(tree, ExecutionHistory(), "b")["b"] is State.RUNNING


def test_a_node_is_running_only_when_the_caller_says_an_iteration_is_in_progress() -> None:
    tree = node("root", node("a"))
    assert display_states(tree, ExecutionHistory())["a"] is State.PENDING


def test_a_passed_leaf_is_completed() -> None:
    tree = node("root", node("a", passes=True), node("b", order=1))
    assert display_states(tree, history(record(1, "a")))["a"] is State.COMPLETED


def test_an_open_leaf_out_of_attempts_is_stuck() -> None:
    tree = node("root", node("a", attempts=3, max_attempts=3))
    past = history(agent_error(1, "a"), agent_error(2, "a"), agent_error(3, "a"))
    assert display_states(tree, past)["a"] is State.STUCK


def test_a_stuck_leaf_is_stuck_even_without_history() -> None:
    tree = node("root", node("a", attempts=2, max_attempts=2))
    assert display_states(tree, ExecutionHistory())["a"] is State.STUCK


def test_an_open_leaf_whose_last_execution_failed_with_attempts_left_is_failed() -> None:
    tree = node("root", node("a", attempts=1))
    assert display_states(tree, history(record(1, "a", guard=FAIL)))["a"] is State.FAILED


def test_a_leaf_whose_last_execution_was_a_runner_error_is_failed() -> None:
    tree = node("root", node("a"))
    assert display_states(tree, history(runner_error(1, "a")))["a"] is State.FAILED


def test_an_open_leaf_that_never_ran_is_pending() -> None:
    tree = node("root", node("a"), node("b", order=1))
    assert display_states(tree, history(record(1, "a")), None)["b"] is State.PENDING


def test_an_open_leaf_whose_last_execution_succeeded_is_pending() -> None:
    tree = node("root", node("a"))
    past = history(record(1, "a", DECOMPOSED, SKIPPED))
    assert display_states(tree, past)["a"] is State.PENDING


def test_a_node_executed_earlier_but_gone_from_the_tree_is_skipped() -> None:
    tree = node("root", node("b"))
    states = display_states(tree, history(agent_error(1, "a"), record(2, "b")))
    assert states["a"] is State.SKIPPED


def test_a_passed_parent_is_completed() -> None:
    tree = node("root", node("p", node("p.1", passes=True), passes=True), node("q", order=1))
    assert display_states(tree, ExecutionHistory())["p"] is State.COMPLETED


def test_a_parent_of_the_running_node_is_running() -> None:
    tree = node("root", node("p", node("p.1", passes=True), node("p.2", order=1)))
    states = display_states(tree, ExecutionHistory(), "p.2")
    assert (states["p"], states["root"]) == (State.RUNNING, State.RUNNING)


def test_an_open_parent_takes_stuck_before_failed_from_its_children() -> None:
    tree = node(
        "root",
        node("p", node("p.1", attempts=1), node("p.2", attempts=1, max_attempts=1, order=1)),
    )
    past = history(agent_error(1, "p.1"), agent_error(2, "p.2"))
    states = display_states(tree, past)
    assert (states["p.1"], states["p.2"]) == (State.FAILED, State.STUCK)
    assert states["p"] is State.STUCK


def test_an_open_parent_with_a_failed_child_is_failed() -> None:
    tree = node("root", node("p", node("p.1", passes=True), node("p.2", attempts=1, order=1)))
    assert display_states(tree, history(agent_error(1, "p.2")))["p"] is State.FAILED


def test_an_open_parent_with_only_pending_or_completed_children_is_pending() -> None:
    tree = node("root", node("p", node("p.1", passes=True), node("p.2", order=1)))
    past = history(record(1, "p", DECOMPOSED, SKIPPED), record(2, "p.1"))
    assert display_states(tree, past)["p"] is State.PENDING


def test_a_parents_own_failed_execution_does_not_make_it_failed() -> None:
    tree = node("root", node("p", node("p.1"), attempts=1))
    past = history(agent_error(1, "p"), record(2, "p", DECOMPOSED, SKIPPED))
    assert display_states(tree, past)["p"] is State.PENDING


def test_a_removed_node_named_as_running_is_running() -> None:
    states = display_states(node("root", node("b")), history(agent_error(1, "a")), "a")
    assert states["a"] is State.RUNNING


def test_display_states_list_the_tree_in_pre_order_then_removed_nodes_by_id() -> None:
    tree = node("root", node("p", node("p.1"), node("p.2", order=1)), node("q", order=1))
    past = history(agent_error(1, "z"), agent_error(2, "x"))
    assert list(display_states(tree, past)) == ["root", "p", "p.1", "p.2", "q", "x", "z"]
