"""Specification of selection and decomposition.

Selection: depth-first, siblings by `(order, id)`, the first leaf with `passes == false`; a
leaf is stuck once `attempts >= max_attempts`. Decomposition: child ids `<parent>.<n>` with
the lowest n free anywhere in the tree, `order` = index, `max_attempts` from the default.
"""

from __future__ import annotations

import attrs
import pytest

from runner_core import (
    ChildSpec,
    CompleteTree,
    Node,
    NodeNext,
    OpenLeaf,
    SelectionStatus,
    StuckLeaf,
    UnknownSelectedNode,
    decompose_node,
    is_stuck,
    select_leaf,
)
from runner_core.tree.decompose import child_specs_from_output, decomposition_problems
from runner_core.tree.selection import leaf_counts, leftmost_open_leaf, node_path
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from tests.helpers.trees import find, tree

# ---------------------------------------------------------------- select_leaf


def selected_id(root: Node) -> str | None:
    selection = select_leaf(root)
    return None if selection.node is None else selection.node.id


def test_the_first_open_leaf_depth_first_is_selected() -> None:
    root = tree(
        "root",
        tree("a", tree("a.1", passes=True, order=0), tree("a.2", order=1), order=0),
        tree("b", order=1),
    )

    assert selected_id(root) == "a.2"


def test_a_deep_leaf_of_an_earlier_subtree_comes_before_a_shallow_later_leaf() -> None:
    root = tree("root", tree("a", tree("a.1", tree("a.1.1")), order=0), tree("b", order=1))

    assert selected_id(root) == "a.1.1"


def test_siblings_are_visited_by_order_not_by_stored_position() -> None:
    root = tree("root", tree("second", order=2), tree("first", order=1))

    assert selected_id(root) == "first"


def test_siblings_with_equal_order_are_visited_by_id() -> None:
    root = tree("root", tree("b", order=1), tree("a", order=1), tree("c", order=1))

    assert selected_id(root) == "a"


def test_order_is_compared_as_a_number() -> None:
    root = tree("root", tree("root.10", order=10), tree("root.9", order=9))

    assert selected_id(root) == "root.9"


def test_an_open_leaf_marked_decompose_is_selected_like_any_leaf() -> None:
    root = tree("root", tree("plan", next="decompose"))

    selection = select_leaf(root)

    assert selection.status is SelectionStatus.OPEN
    assert selection.node is not None
    assert selection.node.next is NodeNext.DECOMPOSE


def test_a_single_open_root_selects_itself() -> None:
    selection = select_leaf(tree("root"))

    assert selection.status is SelectionStatus.OPEN
    assert selection.path == "root"


def test_a_tree_whose_leaves_all_pass_is_complete() -> None:
    root = tree("root", tree("a", passes=True), tree("b", passes=True, order=1))

    selection = select_leaf(root)

    assert selection.status is SelectionStatus.COMPLETE
    assert (selection.node, selection.path) == (None, None)
    assert leftmost_open_leaf(root) is None


def test_the_selected_leaf_is_stuck_when_its_attempts_are_used_up() -> None:
    root = tree("root", tree("a", attempts=3, max_attempts=3), tree("b", order=1))

    selection = select_leaf(root)

    assert selection.status is SelectionStatus.STUCK
    assert selected_id(root) == "a"
    assert selection.path == "root/a"


@pytest.mark.parametrize(
    ("root", "variant"),
    [
        (tree("root", tree("a")), OpenLeaf),
        (tree("root", tree("a", passes=True), passes=True), CompleteTree),
        (tree("root", tree("a", attempts=3, max_attempts=3)), StuckLeaf),
    ],
)
def test_each_selection_status_is_a_variant_of_its_own(root: Node, variant: type) -> None:
    selection = select_leaf(root)

    assert type(selection) is variant
    assert selection.status is variant.status


def test_only_a_selected_leaf_carries_a_node_and_a_path() -> None:
    assert [field.name for field in attrs.fields(OpenLeaf)] == ["node", "path"]
    assert [field.name for field in attrs.fields(StuckLeaf)] == ["node", "path"]
    assert attrs.fields(CompleteTree) == ()
    with pytest.raises(TypeError):
        OpenLeaf()  # type: ignore[call-arg]


def test_a_stuck_leaf_after_the_selected_one_does_not_make_the_tree_stuck() -> None:
    root = tree("root", tree("a", attempts=2, max_attempts=3), tree("b", attempts=3, order=1))

    assert select_leaf(root).status is SelectionStatus.OPEN


@pytest.mark.parametrize(
    ("passes", "attempts", "max_attempts", "stuck"),
    [
        (False, 0, 3, False),
        (False, 2, 3, False),
        (False, 3, 3, True),
        (False, 4, 3, True),
        (True, 3, 3, False),
        (True, 0, 3, False),
    ],
)
def test_a_leaf_is_stuck_when_open_with_attempts_at_or_over_max_attempts(
    passes: bool, attempts: int, max_attempts: int, stuck: bool
) -> None:
    leaf = tree("leaf", passes=passes, attempts=attempts, max_attempts=max_attempts)

    assert is_stuck(leaf) is stuck


def test_the_path_of_the_selected_leaf_joins_its_ancestors_ids_with_slashes() -> None:
    root = tree(
        "root",
        tree("root.1", passes=True, order=1),
        tree("root.2", tree("root.2.1"), order=2),
    )

    assert select_leaf(root).path == "root/root.2/root.2.1"
    assert leftmost_open_leaf(root) == (find(root, "root.2.1"), "root/root.2/root.2.1")


@pytest.mark.parametrize(
    ("node_id", "path"),
    [
        ("root", "root"),
        ("a", "root/a"),
        ("a.1", "root/a/a.1"),
        ("missing", None),
    ],
)
def test_node_path_finds_any_node_by_id(node_id: str, path: str | None) -> None:
    root = tree("root", tree("a", tree("a.1")), tree("b", order=1))

    assert node_path(root, node_id) == path


# ---------------------------------------------------------------- decompose_node


def spec(title: str, next_: NodeNext = NodeNext.EXECUTE) -> ChildSpec:
    return ChildSpec(title=title, goal=f"goal: {title}", acceptance=(f"{title} works",), next=next_)


def test_new_children_get_ids_parent_dot_n_from_one_in_output_order() -> None:
    root = tree("root", tree("leaf"))

    decomposed = decompose_node(root, "leaf", [spec("x"), spec("y"), spec("z")], 3)

    children = find(decomposed, "leaf").children
    assert [(c.id, c.title) for c in children] == [
        ("leaf.1", "x"),
        ("leaf.2", "y"),
        ("leaf.3", "z"),
    ]


def test_new_child_ids_take_the_lowest_n_free_anywhere_in_the_tree() -> None:
    root = tree(
        "root",
        tree("leaf", order=0),
        tree("other", tree("leaf.1"), tree("leaf.3", order=1), order=1),
    )

    decomposed = decompose_node(root, "leaf", [spec("x"), spec("y"), spec("z")], 3)

    assert [c.id for c in find(decomposed, "leaf").children] == ["leaf.2", "leaf.4", "leaf.5"]


def test_child_ids_of_a_parent_with_a_maximal_id_stay_within_the_limit() -> None:
    """A 999- or 1000-character id still gets valid, distinct children."""
    for length in (999, 1000):
        long_id = "p" * length
        root = tree("root", tree(long_id))

        decomposed = decompose_node(root, long_id, [spec(str(n)) for n in range(12)], 3)

        children = [c.id for c in find(decomposed, long_id).children]
        assert all(len(child) <= 1000 for child in children)
        assert len(set(children)) == 12
        assert messages(invariant_findings(decomposed)) == ()


def test_new_children_are_ordered_by_their_index() -> None:
    root = tree("root", tree("leaf"))

    decomposed = decompose_node(root, "leaf", [spec("x"), spec("y"), spec("z")], 3)

    assert [c.order for c in find(decomposed, "leaf").children] == [0, 1, 2]


def test_new_children_start_open_with_the_default_max_attempts() -> None:
    root = tree("root", tree("leaf", max_attempts=9))

    decomposed = decompose_node(root, "leaf", [spec("x"), spec("y")], 5)

    assert [
        (c.passes, c.attempts, c.max_attempts, c.children)
        for c in find(decomposed, "leaf").children
    ] == [(False, 0, 5, ()), (False, 0, 5, ())]


def test_new_children_carry_the_specs_title_goal_acceptance_and_next() -> None:
    root = tree("root", tree("leaf"))

    decomposed = decompose_node(root, "leaf", [spec("plan", NodeNext.DECOMPOSE)], 3)

    child = find(decomposed, "leaf.1")
    assert (child.title, child.goal, child.acceptance, child.next) == (
        "plan",
        "goal: plan",
        ("plan works",),
        NodeNext.DECOMPOSE,
    )


def test_decomposition_changes_nothing_but_the_selected_nodes_children() -> None:
    root = tree("root", tree("a", passes=True, order=0), tree("leaf", order=1))

    decomposed = decompose_node(root, "leaf", [spec("x")], 3)

    assert decomposed.children[0] is root.children[0]
    leaf_before, leaf_after = find(root, "leaf"), find(decomposed, "leaf")
    assert attrs.evolve(leaf_after, children=()) == attrs.evolve(leaf_before, children=())
    assert messages(invariant_findings(decomposed)) == ()


def test_decomposing_an_unknown_node_is_an_error() -> None:
    with pytest.raises(KeyError, match="selected node 'ghost' is not in the tree"):
        decompose_node(tree("root"), "ghost", [spec("x")], 3)


def test_decomposing_an_unknown_node_raises_the_state_updates_error_worded_alike() -> None:
    with pytest.raises(UnknownSelectedNode) as raised:
        decompose_node(tree("root"), "ghost", [spec("x")], 3)

    assert str(raised.value) == "selected node 'ghost' is not in the tree"
    assert isinstance(raised.value, ValueError)


def test_child_specs_are_read_from_decomposer_output_in_order() -> None:
    output = {
        "summary": "split",
        "children": [
            {"title": "a", "goal": "ga", "acceptance": ["ok"], "next": "execute"},
            {"title": "b", "goal": "gb", "acceptance": [], "next": "decompose"},
        ],
    }

    assert child_specs_from_output(output) == (
        ChildSpec("a", "ga", ("ok",), NodeNext.EXECUTE),
        ChildSpec("b", "gb", (), NodeNext.DECOMPOSE),
    )


# ---------------------------------------------------------------- decomposition_problems


@pytest.mark.parametrize(
    ("specs", "problems"),
    [
        pytest.param((spec("x"),), (), id="usable"),
        pytest.param((), ("decomposer returned no children",), id="no children"),
        pytest.param(
            (ChildSpec(" ", "goal", (), NodeNext.EXECUTE),),
            ("decomposer child 0 has an empty title",),
            id="blank title",
        ),
        pytest.param(
            (spec("x"), ChildSpec("t", "\n\t", (), NodeNext.EXECUTE)),
            ("decomposer child 1 has an empty goal",),
            id="blank goal",
        ),
        pytest.param(
            (ChildSpec("", "", (), NodeNext.EXECUTE), ChildSpec("", "g", (), NodeNext.EXECUTE)),
            (
                "decomposer child 0 has an empty title",
                "decomposer child 0 has an empty goal",
                "decomposer child 1 has an empty title",
            ),
            id="several",
        ),
    ],
)
def test_a_decomposition_without_children_or_with_blank_titles_or_goals_is_a_problem(
    specs: tuple[ChildSpec, ...], problems: tuple[str, ...]
) -> None:
    assert decomposition_problems(specs) == problems


def test_leaf_counts_counts_passed_and_all_leaves() -> None:
    three_leaves = tree(
        "root",
        tree("root.3", order=2, title="Third"),
        tree("root.1", order=0, passes=True, attempts=1, title="First"),
        tree("root.2", order=1, attempts=2, title="Second"),
        next="decompose",
    )

    assert leaf_counts(three_leaves) == (1, 3)
    assert leaf_counts(tree("root")) == (0, 1)
