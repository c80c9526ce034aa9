"""Specification of the frontier: which open leaves start now.

Leaves in canonical order, skipping passed and running leaves and those below a running node,
up to the free slots; a stuck leaf that is not running ends the walk and is reported.
"""

from __future__ import annotations

import pytest

from runner_core import Node, select_leaf
from runner_core.parallel.frontier import Frontier, frontier
from tests.helpers.trees import tree


def paths(found: Frontier) -> list[str]:
    return [leaf.path for leaf in found.leaves]


def three_leaves() -> Node:
    return tree("r", tree("a", order=0), tree("b", order=1), tree("c", order=2))


def test_one_slot_with_nothing_running_takes_the_leaf_select_leaf_takes() -> None:
    root = tree("r", tree("a", tree("a.1", passes=True), tree("a.2", order=1)), tree("b", order=1))

    found = frontier(root, 1, frozenset())

    assert [leaf.node for leaf in found.leaves] == [select_leaf(root).node]
    assert paths(found) == ["r/a/a.2"]


def test_sibling_leaves_run_side_by_side() -> None:
    assert paths(frontier(three_leaves(), 3, frozenset())) == ["r/a", "r/b", "r/c"]


def test_leaves_are_taken_in_canonical_order_whatever_the_stored_order() -> None:
    root = tree("r", tree("z", order=0), tree("b", order=1), tree("a", order=1))

    assert paths(frontier(root, 3, frozenset())) == ["r/z", "r/a", "r/b"]


def test_no_more_leaves_than_free_slots_are_taken() -> None:
    assert paths(frontier(three_leaves(), 2, frozenset())) == ["r/a", "r/b"]


def test_different_subtrees_run_side_by_side_depth_first() -> None:
    root = tree("r", tree("a", tree("a.1"), tree("a.2", order=1)), tree("b", tree("b.1"), order=1))

    assert paths(frontier(root, 4, frozenset())) == ["r/a/a.1", "r/a/a.2", "r/b/b.1"]


def test_passed_leaves_are_skipped() -> None:
    root = tree("r", tree("a", passes=True), tree("b", order=1))

    assert paths(frontier(root, 2, frozenset())) == ["r/b"]


def test_running_leaves_are_skipped() -> None:
    assert paths(frontier(three_leaves(), 2, frozenset({"r/a"}))) == ["r/b", "r/c"]


def test_leaves_below_a_running_node_are_skipped() -> None:
    root = tree("r", tree("a", tree("a.1"), tree("a.2", order=1)), tree("b", order=1))

    assert paths(frontier(root, 3, frozenset({"r/a"}))) == ["r/b"]


def test_a_decomposer_leaf_is_taken_like_any_leaf() -> None:
    root = tree("r", tree("a", next="decompose"), tree("b", order=1))

    assert paths(frontier(root, 2, frozenset())) == ["r/a", "r/b"]


def test_a_stuck_leaf_ends_the_walk_and_is_reported() -> None:
    root = tree("r", tree("a"), tree("b", attempts=3, order=1), tree("c", order=2))

    found = frontier(root, 3, frozenset())

    assert paths(found) == ["r/a"]
    assert found.stuck is not None and found.stuck.path == "r/b"


def test_a_stuck_leaf_first_in_line_leaves_nothing_to_start() -> None:
    root = tree("r", tree("a", attempts=3), tree("b", order=1))

    found = frontier(root, 2, frozenset())

    assert found.leaves == ()
    assert found.stuck is not None and found.stuck.node is select_leaf(root).node


def test_a_running_stuck_leaf_handed_to_the_decomposer_holds_nothing_back() -> None:
    root = tree("r", tree("a", attempts=3), tree("b", order=1))

    found = frontier(root, 2, frozenset({"r/a"}))

    assert (paths(found), found.stuck) == (["r/b"], None)


def test_a_stuck_leaf_beyond_the_filled_slots_is_not_reported() -> None:
    root = tree("r", tree("a"), tree("b", attempts=3, order=1))

    assert frontier(root, 1, frozenset()) == frontier(root, 1, frozenset())
    assert frontier(root, 1, frozenset()).stuck is None


def test_a_complete_tree_has_an_empty_frontier() -> None:
    root = tree("r", tree("a", passes=True), passes=True)

    assert frontier(root, 4, frozenset()) == Frontier()


def test_no_free_slot_takes_nothing() -> None:
    assert frontier(three_leaves(), 0, frozenset()) == Frontier()


def test_a_negative_slot_count_is_refused() -> None:
    with pytest.raises(ValueError, match="slots must be at least 0, not -1"):
        frontier(three_leaves(), -1, frozenset())


# ---------------------------------------------------------- leaves kept apart


def index_leaves() -> Node:
    """Four leaves; a and c both declare they change src/index.js."""
    return tree(
        "r",
        tree("a", order=0, acceptance=["files: src/index.js"]),
        tree("b", order=1, acceptance=["files: src/b.js"]),
        tree("c", order=2, acceptance=["files: src/index.js", "test: *c*"]),
        tree("d", order=3),
    )


def test_leaves_declaring_one_files_pattern_never_run_together() -> None:
    assert paths(frontier(index_leaves(), 4, frozenset())) == ["r/a", "r/b", "r/d"]
    # a running: c is passed over again, and taken once a has merged.
    assert paths(frontier(index_leaves(), 3, frozenset({"r/a"}))) == ["r/b", "r/d"]
    assert paths(frontier(index_leaves(), 1, frozenset({"r/b"}))) == ["r/a"]


def test_a_leaf_that_conflicted_once_runs_alone() -> None:
    conflicted = frozenset({"b"})
    assert paths(frontier(three_leaves(), 3, frozenset(), conflicted)) == ["r/a", "r/c"]
    assert paths(frontier(three_leaves(), 3, frozenset({"r/b"}), conflicted)) == []
    # Nothing running and nothing taken before it: it starts, alone.
    only_b = tree("r", tree("a", order=0, passes=True), tree("b", order=1), tree("c", order=2))
    assert paths(frontier(only_b, 3, frozenset(), conflicted)) == ["r/b"]
