"""select_leaf against a brute-force reference (selection and stuck leaves)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core import Node, SelectionStatus, is_stuck, select_leaf
from runner_core.testing import reference_select_leaf, trees
from runner_core.tree.selection import node_path

# Canonical or not, and with passes drawn freely as well as derived: selection reads only
# leaves and sorts siblings itself, so it must agree with the reference on all of them.
selection_trees = st.tuples(st.booleans(), st.booleans()).flatmap(
    lambda flags: trees(max_attempts_cap=2, canonical=flags[0], derived_passes=flags[1])
)


@given(selection_trees)
def test_select_leaf_agrees_with_the_reference(tree: Node) -> None:
    """select_leaf returns the reference's status, the very same leaf and the same path."""
    reference = reference_select_leaf(tree)
    selection = select_leaf(tree)
    assert selection.status is reference.status
    assert selection.node is reference.node
    assert selection.path == reference.path


@given(selection_trees)
def test_selected_path_and_stuck_flag_are_consistent(tree: Node) -> None:
    """The selected leaf's path is node_path of its id, and it is stuck iff is_stuck says so."""
    selection = select_leaf(tree)
    if selection.node is None:
        assert selection.status is SelectionStatus.COMPLETE
        return
    assert node_path(tree, selection.node.id) == selection.path
    assert is_stuck(selection.node) == (selection.status is SelectionStatus.STUCK)
