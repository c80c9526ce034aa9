"""Properties of budgets and the per-node roll-up: a parent's figures are its own plus its
children's, the root's are the whole tree's, and a budget once reached stays reached."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory, ExecutionRecord, TokenUsage, summarize
from runner_core.loop.budget import exhausted_budget, rolled_up_totals
from runner_core.run.config import BudgetConfig
from runner_core.tree.model import Node, NodeNext, iter_preorder
from tests.helpers.records import record

token_usages = st.none() | st.builds(
    TokenUsage, st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)
)
costs = st.none() | st.floats(min_value=0.0, max_value=100.0)


@st.composite
def small_trees(draw: st.DrawFn, node_id: str = "root", depth: int = 0) -> Node:
    """A tree of unique ids `root`, `root.1`, `root.1.2`, ...: the roll-up reads only its shape."""
    width = draw(st.integers(0, 3 if depth < 3 else 0))
    children = tuple(draw(small_trees(f"{node_id}.{n}", depth + 1)) for n in range(1, width + 1))
    return Node(node_id, 0, "title", "goal", (), NodeNext.EXECUTE, False, 0, 3, children)


@st.composite
def tree_and_records(draw: st.DrawFn) -> tuple[Node, list[ExecutionRecord]]:
    root = draw(small_trees())
    node_ids = [node.id for node, _ in iter_preorder(root)] + ["not.in.tree"]
    count = draw(st.integers(0, 12))
    records = [
        record(
            iteration,
            draw(st.sampled_from(node_ids)),
            tokens=draw(token_usages),
            cost_usd=draw(costs),
            duration_ms=draw(st.integers(0, 10**7)),
        )
        for iteration in range(1, count + 1)
    ]
    return root, records


@given(tree_and_records())
def test_a_parent_totals_its_own_executions_and_its_children_s(
    case: tuple[Node, list[ExecutionRecord]],
) -> None:
    """totals(parent) = own(parent) + sum(totals(child)); totals(root) = every in-tree record."""
    root, records = case
    history = ExecutionHistory.of(records)
    totals = rolled_up_totals(root, history)
    for node, _ in iter_preorder(root):
        own = history.records_for(node.id)
        below = [totals[child.id] for child in node.children]
        assert totals[node.id].executions == len(own) + sum(t.executions for t in below)
        assert totals[node.id].duration_ms == sum(r.duration_ms for r in own) + sum(
            t.duration_ms for t in below
        )
    in_tree = [r for r in records if r.node_id != "not.in.tree"]
    top = totals[root.id]
    assert top.executions == len(in_tree)
    assert top.attempts_consumed == sum(1 for r in in_tree if r.consumed_attempt)
    expected = [r.cost_usd for r in in_tree if r.cost_usd is not None]
    assert top.cost_usd == (math.fsum(expected) if expected else None)
    in_tree_tokens = summarize(ExecutionHistory.of(in_tree)).total_tokens
    assert top.tokens == in_tree_tokens


budgets = st.builds(
    BudgetConfig,
    max_cost_usd=st.none() | st.floats(min_value=0.01, max_value=500.0),
    max_tokens=st.none() | st.integers(1, 10**7),
    max_wall_secs=st.none() | st.integers(1, 10**5),
)


@given(tree_and_records(), budgets)
def test_a_budget_once_reached_stays_reached_as_the_run_goes_on(
    case: tuple[Node, list[ExecutionRecord]], budget: BudgetConfig
) -> None:
    """If the first k records exhaust a budget, so do the first k + 1 (spending only grows)."""
    _, records = case
    reached = False
    for count in range(len(records) + 1):
        now_reached = exhausted_budget(budget, summarize(ExecutionHistory.of(records[:count])))
        assert not reached or now_reached is not None
        reached = now_reached is not None
