"""Budgets against a run's history, and per-node figures rolled up the tree."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory, TokenUsage, summarize
from runner_core.loop.budget import (
    BudgetUse,
    budget_uses,
    exact_sum,
    exhausted_budget,
    rolled_up_totals,
)
from runner_core.run.config import BudgetConfig
from runner_core.tree.model import AgentStatus, GuardOutcome
from tests.helpers.records import record
from tests.helpers.trees import tree

HISTORY = ExecutionHistory.of(
    [
        record(1, "root.1", tokens=TokenUsage(100, 50, 900), cost_usd=0.25, duration_ms=60_000),
        record(2, "root.2", tokens=TokenUsage(10, 5, 0), cost_usd=0.5, duration_ms=30_000),
        record(3, "root.2", tokens=None, cost_usd=None, duration_ms=10_000),
    ]
)
SUMMARY = summarize(HISTORY)


def test_no_budget_set_is_never_exhausted() -> None:
    assert budget_uses(BudgetConfig(), SUMMARY) == ()
    assert exhausted_budget(BudgetConfig(), SUMMARY) is None


def test_spent_against_each_budget_set() -> None:
    assert budget_uses(BudgetConfig(10.0, 1000, 3600), SUMMARY) == (
        BudgetUse("cost_usd", 0.75, 10.0),
        BudgetUse("tokens", 165.0, 1000.0),
        BudgetUse("wall_secs", 100.0, 3600.0),
    )


def test_cached_tokens_do_not_count_toward_max_tokens() -> None:
    assert exhausted_budget(BudgetConfig(max_tokens=166), SUMMARY) is None
    assert exhausted_budget(BudgetConfig(max_tokens=165), SUMMARY) == BudgetUse(
        "tokens", 165.0, 165.0
    )


@pytest.mark.parametrize(
    ("budget", "name"),
    [
        (BudgetConfig(max_cost_usd=0.75), "cost_usd"),
        (BudgetConfig(max_tokens=100), "tokens"),
        (BudgetConfig(max_wall_secs=100), "wall_secs"),
        (BudgetConfig(max_cost_usd=0.5, max_tokens=100, max_wall_secs=100), "cost_usd"),
        (BudgetConfig(max_cost_usd=5.0, max_tokens=100, max_wall_secs=100), "tokens"),
        (BudgetConfig(max_cost_usd=5.0, max_tokens=1000, max_wall_secs=100), "wall_secs"),
    ],
)
def test_a_budget_is_exhausted_once_spent_reaches_its_limit_cost_first(
    budget: BudgetConfig, name: str
) -> None:
    exhausted = exhausted_budget(budget, SUMMARY)
    assert exhausted is not None and exhausted.budget == name


def test_a_run_without_costs_has_spent_nothing_against_max_cost() -> None:
    summary = summarize(ExecutionHistory.of([record(1)]))
    assert budget_uses(BudgetConfig(max_cost_usd=1.0), summary) == (
        BudgetUse("cost_usd", 0.0, 1.0),
    )


TREE = tree(
    "root",
    tree("root.1", tree("root.1.1"), tree("root.1.2")),
    tree("root.2"),
)


def test_a_parent_rolls_up_its_subtree_s_tokens_cost_duration_and_attempts() -> None:
    history = ExecutionHistory.of(
        [
            record(1, "root.1", AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED, cost_usd=0.1),
            record(2, "root.1.1", tokens=TokenUsage(1, 2, 3), cost_usd=0.2, duration_ms=5),
            record(3, "root.1.2", AgentStatus.RETRY, GuardOutcome.SKIPPED, duration_ms=7),
            record(4, "root.1.2"),
            record(5, "gone", cost_usd=9.0),
        ]
    )
    totals = rolled_up_totals(TREE, history)
    assert list(totals) == ["root", "root.1", "root.1.1", "root.1.2", "root.2"]
    leaf = totals["root.1.2"]
    assert (leaf.executions, leaf.attempts_consumed, leaf.duration_ms, leaf.cost_usd) == (
        2,
        1,
        1007,
        None,
    )
    parent = totals["root.1"]
    assert (parent.executions, parent.attempts_consumed, parent.duration_ms) == (4, 1, 2012)
    assert parent.tokens == TokenUsage(1, 2, 3)
    assert parent.cost_usd == pytest.approx(0.3)
    assert totals["root"].executions == 4
    assert totals["root.2"].executions == 0 and totals["root.2"].cost_usd is None


@given(st.lists(st.floats(min_value=0, allow_nan=False, allow_infinity=False)))
def test_costs_sum_exactly_as_their_fractions_do(costs: list[float]) -> None:
    assert exact_sum(costs) == sum(map(Fraction, costs), Fraction(0))
