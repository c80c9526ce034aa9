"""Specification of the three-way tree merge: a finished job's tree onto the run branch's.

Each node's parent and own fields come from whichever side changed them; a field changed
differently on both sides, or a node removed on one side and changed on the other, conflicts.
The merged tree is settled: parents' passes derived, siblings in canonical order.
"""

from __future__ import annotations

from typing import Any

import attrs

from runner_core import Node
from runner_core.parallel.tree_merge import (
    ConflictReason,
    FieldConflict,
    TreeConflict,
    merge_trees,
)
from tests.helpers.trees import find, ids, tree


def base_tree() -> Node:
    return tree(
        "r",
        tree("a", tree("a.1"), tree("a.2", order=1)),
        tree("b", order=1),
        tree("c", order=2),
    )


def edited(root: Node, node_id: str, **fields: Any) -> Node:
    """`root` with the node `node_id` given these fields (children included)."""
    if root.id == node_id:
        return attrs.evolve(root, **fields)
    return attrs.evolve(
        root, children=tuple(edited(child, node_id, **fields) for child in root.children)
    )


def without(root: Node, node_id: str) -> Node:
    kept = tuple(without(child, node_id) for child in root.children if child.id != node_id)
    return attrs.evolve(root, children=kept)


def merged(base: Node, ours: Node, theirs: Node) -> Node:
    result = merge_trees(base, ours, theirs)
    assert isinstance(result, Node), result
    return result


def conflict(base: Node, ours: Node, theirs: Node) -> TreeConflict:
    result = merge_trees(base, ours, theirs)
    assert isinstance(result, TreeConflict), result
    return result


def test_edits_to_different_nodes_both_land() -> None:
    base = base_tree()
    ours = edited(base, "b", title="B")
    theirs = edited(base, "c", goal="C")

    result = merged(base, ours, theirs)

    assert (find(result, "b").title, find(result, "c").goal) == ("B", "C")


def test_edits_to_different_fields_of_one_node_both_land() -> None:
    base = base_tree()

    result = merged(base, edited(base, "b", title="B"), edited(base, "b", goal="G"))

    assert (find(result, "b").title, find(result, "b").goal) == ("B", "G")


def test_the_same_change_on_both_sides_is_no_conflict() -> None:
    base = base_tree()
    both = edited(base, "b", acceptance=("x",))

    assert find(merged(base, both, both), "b").acceptance == ("x",)


def test_children_added_by_a_decomposer_join_beside_the_other_sides_work() -> None:
    base = base_tree()
    decomposed = edited(base, "c", children=(tree("c.1"), tree("c.2", order=1)))
    ours = edited(base, "b", passes=True)

    result = merged(base, ours, decomposed)

    assert [child.id for child in find(result, "c").children] == ["c.1", "c.2"]
    assert find(result, "b").passes is True


def test_runner_owned_fields_come_from_the_side_that_changed_them() -> None:
    base = base_tree()
    ours = edited(base, "b", passes=True)
    theirs = edited(base, "c", attempts=2)

    result = merged(base, ours, theirs)

    assert (find(result, "b").passes, find(result, "c").attempts) == (True, 2)


def test_parents_pass_when_the_two_sides_together_pass_all_their_children() -> None:
    base = base_tree()
    ours = edited(base, "a.1", passes=True)
    theirs = edited(base, "a.2", passes=True)

    assert find(merged(base, ours, theirs), "a").passes is True


def test_a_moved_order_puts_siblings_in_canonical_order() -> None:
    base = base_tree()

    result = merged(base, edited(base, "c", order=-1), base)

    assert [child.id for child in result.children] == ["c", "a", "b"]


def test_a_node_moved_on_one_side_moves() -> None:
    base = base_tree()
    moved = edited(without(base, "c"), "b", children=(tree("c"),))

    result = merged(base, base, moved)

    assert [child.id for child in find(result, "b").children] == ["c"]


def test_a_node_removed_on_one_side_and_untouched_on_the_other_goes() -> None:
    base = base_tree()

    result = merged(base, without(base, "c"), edited(base, "b", title="B"))

    assert ids(result) == ["r", "a", "a.1", "a.2", "b"]


def test_a_field_changed_differently_on_both_sides_conflicts() -> None:
    base = base_tree()

    found = conflict(base, edited(base, "b", title="one"), edited(base, "b", title="two"))

    assert found.conflicts == (FieldConflict("b", "title", ConflictReason.CHANGED_ON_BOTH),)
    assert (
        found.line == "tree.json does not merge: node 'b' title: changed differently on both sides"
    )


def test_a_node_removed_on_one_side_and_changed_on_the_other_conflicts() -> None:
    base = base_tree()

    found = conflict(base, without(base, "c"), edited(base, "c", goal="G", attempts=1))

    assert found.conflicts == (
        FieldConflict("c", "attempts", ConflictReason.REMOVED_AND_CHANGED),
        FieldConflict("c", "goal", ConflictReason.REMOVED_AND_CHANGED),
    )


def test_a_child_added_under_a_node_the_other_side_removed_conflicts() -> None:
    base = base_tree()

    found = conflict(base, without(base, "c"), edited(base, "c", children=(tree("c.1"),)))

    assert FieldConflict("c.1", "parent", ConflictReason.PARENT_REMOVED) in found.conflicts


def test_moves_that_together_make_a_cycle_conflict() -> None:
    base = tree("r", tree("a"), tree("b", order=1))
    ours = tree("r", tree("a", tree("b", order=1)))
    theirs = tree("r", tree("b", tree("a"), order=1))

    found = conflict(base, ours, theirs)

    assert found.conflicts == (
        FieldConflict("a", "parent", ConflictReason.CYCLE),
        FieldConflict("b", "parent", ConflictReason.CYCLE),
    )


def test_a_node_added_differently_on_both_sides_conflicts() -> None:
    base = base_tree()
    ours = edited(base, "b", children=(tree("n", title="one"),))
    theirs = edited(base, "b", children=(tree("n", title="two"),))

    found = conflict(base, ours, theirs)

    assert found.conflicts == (FieldConflict("n", "title", ConflictReason.ADDED_ON_BOTH),)


def test_conflicts_are_sorted_by_node_then_field_on_one_line() -> None:
    base = base_tree()
    ours = edited(edited(base, "c", title="1", goal="1"), "b", goal="1")
    theirs = edited(edited(base, "c", title="2", goal="2"), "b", goal="2")

    found = conflict(base, ours, theirs)

    assert [(item.node_id, item.field) for item in found.conflicts] == [
        ("b", "goal"),
        ("c", "goal"),
        ("c", "title"),
    ]
    assert "\n" not in found.line
