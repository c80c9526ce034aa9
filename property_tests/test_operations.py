"""Operator commands (`runner node ...`) on any valid tree (operating a run).

Whatever node they name, the operations either refuse with an OperationError or return a tree
that passes every validation layer against the tree they were given: passed nodes never change.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner_core import Node, NodeNext
from runner_core.run.operations import (
    NewPlan,
    NodeOperation,
    OperationError,
    decompose_later,
    decompose_now,
    operation_problems,
    replace_node,
    retry_node,
    skip_node,
)
from runner_core.testing import trees
from runner_core.tree.decompose import ChildSpec
from runner_core.tree.model import iter_preorder
from runner_core.tree.selection import select_leaf

SPEC = ChildSpec("Part", "Do part.", ("part works",), NodeNext.EXECUTE)
PLAN = NewPlan("New", "Do it anew.", ("new works",), NodeNext.EXECUTE, (SPEC,))
OPERATIONS = {
    NodeOperation.RETRY: lambda tree, node_id: retry_node(tree, node_id, 2),
    NodeOperation.DECOMPOSE: decompose_later,
    NodeOperation.REPLACE: lambda tree, node_id: replace_node(tree, node_id, PLAN, 3),
    NodeOperation.SKIP: skip_node,
}


def tree_and_node() -> st.SearchStrategy[tuple[Node, str]]:
    return trees().flatmap(
        lambda tree: st.tuples(
            st.just(tree), st.sampled_from([node.id for node, _ in iter_preorder(tree)])
        )
    )


@pytest.mark.parametrize("op", list(OPERATIONS))
@given(case=tree_and_node())
def test_an_operation_refuses_or_keeps_every_layer(
    op: NodeOperation, case: tuple[Node, str]
) -> None:
    """Every result is valid against its input under every layer; a passed node is refused."""
    tree, node_id = case
    passed = {node.id for node, _ in iter_preorder(tree) if node.passes}
    try:
        after = OPERATIONS[op](tree, node_id)
    except OperationError:
        return
    assert node_id not in passed
    assert operation_problems(tree, after, node_id, op) == ()


@given(case=tree_and_node())
def test_retry_makes_an_open_leaf_selectable_again(case: tuple[Node, str]) -> None:
    """After retry, the node has attempts left: it can no longer be the stuck leaf."""
    tree, node_id = case
    try:
        after = retry_node(tree, node_id, 1)
    except OperationError:
        return
    selection = select_leaf(after)
    assert not (
        selection.node is not None
        and selection.node.id == node_id
        and selection.status.value == "stuck"
    )


@given(case=tree_and_node())
def test_decompose_now_adds_children_only_under_the_node(case: tuple[Node, str]) -> None:
    """The new ids all hang under the named node; every other node is kept."""
    tree, node_id = case
    try:
        after = decompose_now(tree, node_id, (SPEC, SPEC), 3)
    except OperationError:
        return
    before_ids = {node.id for node, _ in iter_preorder(tree)}
    new = [(node, up) for node, up in iter_preorder(after) if node.id not in before_ids]
    assert len(new) == 2
    assert all(ancestors and ancestors[-1] == node_id for _, ancestors in new)
