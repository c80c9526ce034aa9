"""Properties of the canonical form: one text per tree, stable under re-reading."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core import (
    Node,
    NodeNext,
    count_nodes,
    dumps_tree,
    parse_tree,
    tree_from_json,
    tree_to_json,
)
from runner_core.testing import trees
from runner_core.testing.trees import preorder
from runner_core.tree.model import MAX_DEPTH, sort_children
from runner_core.tree.serialization import loads_json
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from runner_core.validation.schema import schema_findings

any_order_trees = trees(canonical=None)


@st.composite
def chains(draw: st.DrawFn, *, max_depth: int) -> Node:
    """A single path of up to `max_depth` nodes: the deepest shape a tree can take."""
    depth = draw(st.integers(1, max_depth))
    node = Node(f"n{depth}", 0, "leaf", "goal", (), NodeNext.EXECUTE, draw(st.booleans()), 0, 1)
    for level in range(depth - 1, 0, -1):
        node = Node(
            f"n{level}", level % 3, "t", "g", ("a",), NodeNext.DECOMPOSE, node.passes, 0, 2, (node,)
        )
    return node


@given(any_order_trees)
def test_canonical_text_is_idempotent(tree: Node) -> None:
    """dumps(parse(dumps(t))) == dumps(t): the canonical text reads back to itself."""
    text = dumps_tree(tree)
    assert dumps_tree(parse_tree(text)) == text
    assert dumps_tree(parse_tree(text.encode("utf-8"))) == text


@given(any_order_trees)
def test_canonical_text_survives_a_json_round_trip(tree: Node) -> None:
    """tree_from_json(json.loads(dumps_tree(t))) == sort_children(t), and sorting is idempotent."""
    canonical = sort_children(tree)
    assert tree_from_json(json.loads(dumps_tree(tree))) == canonical
    assert sort_children(canonical) == canonical
    assert dumps_tree(canonical) == dumps_tree(tree)


@given(any_order_trees)
def test_canonical_text_is_json_dumps_of_the_sorted_tree(tree: Node) -> None:
    """dumps_tree(t) is json.dumps(indent=2, UTF-8) of the sorted tree plus a newline."""
    expected = json.dumps(tree_to_json(sort_children(tree)), indent=2, ensure_ascii=False) + "\n"
    assert dumps_tree(tree) == expected


@given(any_order_trees)
def test_sorting_keeps_every_node_and_orders_siblings(tree: Node) -> None:
    """sort_children keeps the same nodes under the same parents, siblings by (order, id)."""
    canonical = sort_children(tree)

    def shape(root: Node) -> set[tuple[str, str | None]]:
        return {(node.id, None if parent is None else parent.id) for node, parent in preorder(root)}

    assert shape(canonical) == shape(tree)
    for node, _ in preorder(canonical):
        keys = [(child.order, child.id) for child in node.children]
        assert keys == sorted(keys)
    assert messages(invariant_findings(canonical)) == ()


@settings(max_examples=40)
@given(chains(max_depth=MAX_DEPTH))
def test_chains_as_deep_as_the_limit_round_trip(tree: Node) -> None:
    """A chain of up to MAX_DEPTH levels round-trips and validates.

    Before the depth limit this ran chains of up to 1,200 levels, too deep for a
    recursive parser; every walk is recursive now, and deeper trees are refused (below).
    """
    text = dumps_tree(tree)
    parsed = parse_tree(text)
    assert parsed == tree
    assert dumps_tree(parsed) == text
    assert tree_from_json(loads_json(text)) == tree
    assert messages(schema_findings(tree_to_json(parsed))) == ()
    assert messages(invariant_findings(parsed)) == ()


@settings(max_examples=40)
@given(chains(max_depth=3 * MAX_DEPTH).filter(lambda tree: count_nodes(tree) > MAX_DEPTH))
def test_chains_deeper_than_the_limit_are_refused_at_their_first_node_too_deep(tree: Node) -> None:
    """invariant_findings names exactly the node at depth MAX_DEPTH + 1, whatever lies below."""
    path = "/".join(f"n{level}" for level in range(1, MAX_DEPTH + 2))
    assert messages(invariant_findings(tree)) == (
        f"{path}: depth {MAX_DEPTH + 1} exceeds the limit of {MAX_DEPTH}",
    )


@given(any_order_trees)
def test_reading_keeps_siblings_in_the_given_order(tree: Node) -> None:
    """tree_from_json keeps siblings exactly as given: tree_to_json and back is the identity."""
    assert tree_from_json(tree_to_json(tree)) == tree
    assert tree_to_json(tree_from_json(tree_to_json(tree))) == tree_to_json(tree)
