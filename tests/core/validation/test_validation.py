"""Specification of the validation layers.

Schema, invariants, passed-node immutability, status invariants and child additions: each
layer collects every error, sorted, in the exact words of the contract.
"""

from __future__ import annotations

from typing import Any

import pytest

from runner_core import AgentStatus, Node
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import Finding, messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import id_problem, invariant_findings
from runner_core.validation.schema import schema_findings
from runner_core.validation.status import status_findings
from tests.helpers.trees import chain_json, node, tree

REQUIRED_FIELDS = [
    "id",
    "order",
    "title",
    "goal",
    "acceptance",
    "next",
    "passes",
    "attempts",
    "max_attempts",
    "children",
]


# ---------------------------------------------------------------- layer 1: schema


def test_a_valid_tree_has_no_schema_errors() -> None:
    data = node("root", node("a", passes=True), node("b", next="decompose", acceptance=["x"]))

    assert messages(schema_findings(data)) == ()


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_every_field_is_required(field: str) -> None:
    data = node("root")
    del data[field]

    assert messages(schema_findings(data)) == (f"$ must contain '{field}'",)


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_a_missing_field_of_a_child_is_reported_at_the_child_path(field: str) -> None:
    child = node("a")
    del child[field]

    assert messages(schema_findings(node("root", child))) == (
        f"$.children[0] must contain '{field}'",
    )


def test_a_field_outside_the_schema_is_rejected() -> None:
    data = node("root")
    data["extra"] = 1

    assert messages(schema_findings(data)) == ("$ must not contain 'extra'",)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("id", 7, "$.id must be string"),
        ("id", None, "$.id must be string"),
        ("order", "1", "$.order must be integer"),
        ("order", 1.5, "$.order must be integer"),
        ("title", ["t"], "$.title must be string"),
        ("goal", None, "$.goal must be string"),
        ("acceptance", "run the tests", "$.acceptance must be array"),
        ("acceptance", ["ok", 1], "$.acceptance[1] must be string"),
        ("passes", 0, "$.passes must be boolean"),
        ("passes", "true", "$.passes must be boolean"),
        ("attempts", "0", "$.attempts must be integer"),
        ("max_attempts", 2.5, "$.max_attempts must be integer"),
        ("children", {}, "$.children must be array"),
        ("children", [1], "$.children[0] must be object"),
    ],
)
def test_a_field_of_the_wrong_type_is_rejected(field: str, value: Any, message: str) -> None:
    data = node("root")
    data[field] = value

    assert messages(schema_findings(data)) == (message,)


@pytest.mark.parametrize("field", ["order", "attempts", "max_attempts"])
def test_a_boolean_is_not_an_integer(field: str) -> None:
    data = node("root")
    data[field] = True

    assert messages(schema_findings(data)) == (f"$.{field} must be integer",)


@pytest.mark.parametrize("field", ["attempts", "max_attempts"])
def test_a_negative_count_is_rejected(field: str) -> None:
    data = node("root", attempts=0)
    data[field] = -1

    assert messages(schema_findings(data)) == (f"$.{field} must be bigger than or equal to 0",)


def test_max_attempts_of_zero_passes_the_schema_and_is_left_to_the_invariants() -> None:
    assert messages(schema_findings(node("root", max_attempts=0))) == ()


def test_an_empty_id_is_rejected() -> None:
    assert messages(schema_findings(node(""))) == (
        "$.id must be longer than or equal to 1 characters",
    )


@pytest.mark.parametrize("value", ["run", "Execute", "", None])
def test_next_must_be_execute_or_decompose(value: Any) -> None:
    data = node("root")
    data["next"] = value

    assert messages(schema_findings(data)) == ("$.next must be one of ['execute', 'decompose']",)


@pytest.mark.parametrize("document", [[], None, "tree", 3])
def test_a_document_that_is_not_an_object_is_rejected(document: Any) -> None:
    assert messages(schema_findings(document)) == ("$ must be object",)


def test_errors_of_several_nodes_are_all_collected_with_their_json_paths_sorted() -> None:
    bad_grandchild = node("b.1", passes="yes")
    del bad_grandchild["goal"]
    data = node(
        "root",
        node("a", order="first"),
        node("b", bad_grandchild, attempts=-2),
        next="later",
    )
    data["colour"] = "red"

    assert messages(schema_findings(data)) == (
        "$ must not contain 'colour'",
        "$.children[0].order must be integer",
        "$.children[1].attempts must be bigger than or equal to 0",
        "$.children[1].children[0] must contain 'goal'",
        "$.children[1].children[0].passes must be boolean",
        "$.next must be one of ['execute', 'decompose']",
    )


def test_several_errors_of_one_node_are_all_collected() -> None:
    data = node("root", order=None, title=1, passes=None)

    assert messages(schema_findings(data)) == (
        "$.order must be integer",
        "$.passes must be boolean",
        "$.title must be string",
    )


def test_a_tree_deeper_than_the_limit_is_walked_to_every_error() -> None:
    depth = 150
    data = chain_json(depth, attempts=-1, title=None)
    bottom = "$" + ".children[0]" * (depth - 1)

    assert messages(schema_findings(data)) == (
        f"{bottom}.attempts must be bigger than or equal to 0",
        f"{bottom}.title must be string",
    )


# Before the depth limit a 3,000-deep document was walked without recursion: the
# invalid one to every error, the valid one to none. Both are now one error, not a traceback.
TOO_DEEP = "$ nests deeper than the schema validator can follow (a tree is at most 100 levels deep)"


def test_a_deep_invalid_document_is_one_error_naming_its_depth() -> None:
    assert messages(schema_findings(chain_json(3_000, attempts=-1, title=None))) == (TOO_DEEP,)


def test_a_deep_valid_document_is_one_error_naming_its_depth() -> None:
    assert messages(schema_findings(chain_json(3_000))) == (TOO_DEEP,)


# ---------------------------------------------------------------- layer 2: invariants


def test_a_tree_that_holds_every_invariant_has_no_errors() -> None:
    root = tree(
        "root",
        tree("a", tree("a.1", order=0), tree("a.2", order=0), order=0),
        tree("b", order=1, attempts=3, max_attempts=3),
    )

    assert messages(invariant_findings(root)) == ()


def test_a_duplicate_id_is_reported_at_the_path_of_its_second_occurrence() -> None:
    root = tree("root", tree("a", order=0), tree("b", tree("a"), order=1))

    assert messages(invariant_findings(root)) == ("duplicate id 'a' at root/b/a",)


def test_max_attempts_must_be_positive() -> None:
    root = tree("root", tree("a", max_attempts=0))

    assert messages(invariant_findings(root)) == ("root/a: max_attempts must be > 0",)


def test_attempts_may_not_exceed_max_attempts() -> None:
    root = tree("root", tree("a", attempts=4, max_attempts=3))

    assert messages(invariant_findings(root)) == ("root/a: attempts 4 exceeds max_attempts 3",)


@pytest.mark.parametrize(
    "children",
    [
        pytest.param((tree("a", order=2), tree("b", order=1)), id="by order"),
        pytest.param((tree("b", order=1), tree("a", order=1)), id="by id when orders tie"),
        pytest.param((tree("a", order=0), tree("c", order=2), tree("b", order=1)), id="later pair"),
    ],
)
def test_children_must_be_sorted_by_order_then_id(children: tuple[Node, ...]) -> None:
    root = tree("root", *children)

    assert messages(invariant_findings(root)) == ("root: children must be sorted by (order,id)",)


def test_order_is_compared_as_a_number_not_as_text() -> None:
    root = tree("root", tree("root.9", order=9), tree("root.10", order=10))

    assert messages(invariant_findings(root)) == ()


def test_several_invariant_violations_are_all_reported_sorted() -> None:
    root = tree(
        "root",
        tree("z", tree("x", order=1), tree("w", order=0), attempts=5, max_attempts=2, order=0),
        tree("y", tree("z"), max_attempts=0, order=1),
    )

    assert messages(invariant_findings(root)) == (
        "duplicate id 'z' at root/y/z",
        "root/y: max_attempts must be > 0",
        "root/z: attempts 5 exceeds max_attempts 2",
        "root/z: children must be sorted by (order,id)",
    )


# ---------------------------------------------------------------- layer 3: immutability


def passed_tree() -> Node:
    """root (open) → a (passed) → a.1 (passed) → a.1.1 (passed); b, c open leaves."""
    return tree(
        "root",
        tree(
            "a",
            tree("a.1", tree("a.1.1", passes=True), passes=True),
            passes=True,
            order=0,
        ),
        tree("b", order=1),
        tree("c", order=2),
    )


def test_an_untouched_tree_keeps_every_passed_node() -> None:
    assert messages(passed_node_findings(passed_tree(), passed_tree())) == ()


def test_a_removed_passed_node_is_missing() -> None:
    prev = tree("root", tree("a", passes=True, order=0), tree("b", order=1))
    after = tree("root", tree("b", order=1))

    assert messages(passed_node_findings(prev, after)) == ("passed node 'a' missing in next tree",)


def test_a_passed_node_under_another_parent_has_moved() -> None:
    prev = tree("root", tree("a", passes=True, order=0), tree("b", order=1))
    after = tree("root", tree("b", tree("a", passes=True, order=0), order=1))

    assert messages(passed_node_findings(prev, after)) == (
        "passed node 'a' moved from parent 'root' to 'b'",
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("order", 5),
        ("title", "a new title"),
        ("goal", "a new goal"),
        ("acceptance", ["a new criterion"]),
        ("next", "decompose"),
        ("passes", False),
        ("attempts", 1),
        ("max_attempts", 9),
    ],
)
def test_a_passed_node_with_any_field_edited_has_changed(field: str, value: Any) -> None:
    prev = tree("root", tree("a", passes=True), tree("b", order=1))
    after = tree("root", tree("a", **{"passes": True, field: value}), tree("b", order=1))

    assert messages(passed_node_findings(prev, after)) == ("passed node 'a' changed in next tree",)


def test_a_passed_node_that_gained_a_child_has_changed() -> None:
    prev = tree("root", tree("a", passes=True))
    after = tree("root", tree("a", tree("a.1"), passes=True))

    assert messages(passed_node_findings(prev, after)) == ("passed node 'a' changed in next tree",)


def test_a_change_deep_in_a_passed_subtree_changes_every_passed_ancestor() -> None:
    after = tree(
        "root",
        tree(
            "a",
            tree("a.1", tree("a.1.1", passes=True, goal="rewritten"), passes=True),
            passes=True,
            order=0,
        ),
        tree("b", order=1),
        tree("c", order=2),
    )

    assert messages(passed_node_findings(passed_tree(), after)) == (
        "passed node 'a' changed in next tree",
        "passed node 'a.1' changed in next tree",
        "passed node 'a.1.1' changed in next tree",
    )


def test_open_nodes_may_be_edited_moved_and_removed() -> None:
    prev = passed_tree()
    after = tree(
        "root",
        tree(
            "a",
            tree("a.1", tree("a.1.1", passes=True), passes=True),
            passes=True,
            order=0,
        ),
        tree("c", tree("b", title="moved and edited"), order=2, goal="edited"),
    )

    assert messages(passed_node_findings(prev, after)) == ()


def test_immutability_errors_are_sorted_by_node_id() -> None:
    prev = tree(
        "root",
        tree("c", passes=True, order=0),
        tree("a", passes=True, order=1),
        tree("b", passes=True, order=2),
        tree("d", order=3),
    )
    after = tree(
        "root",
        tree("a", passes=True, order=1, title="edited"),
        tree("d", tree("b", passes=True, order=2, title="edited too"), order=3),
    )

    assert messages(passed_node_findings(prev, after)) == (
        "passed node 'a' changed in next tree",
        "passed node 'b' changed in next tree",
        "passed node 'b' moved from parent 'root' to 'd'",
        "passed node 'c' missing in next tree",
    )


# ---------------------------------------------------------------- layer 4: status invariants


def with_leaf_children(count: int) -> Node:
    children = tuple(tree(f"leaf.{n}", order=n) for n in range(1, count + 1))
    return tree("root", tree("leaf", *children))


@pytest.mark.parametrize(
    ("status", "prev_children", "next_children", "expected"),
    [
        (
            AgentStatus.DECOMPOSED,
            0,
            0,
            ("status=decomposed but selected node 'leaf' did not gain children (prev=0, next=0)",),
        ),
        (AgentStatus.DECOMPOSED, 0, 2, ()),
        (
            AgentStatus.DECOMPOSED,
            2,
            1,
            ("status=decomposed but selected node 'leaf' did not gain children (prev=2, next=1)",),
        ),
        (AgentStatus.DONE, 0, 0, ()),
        (
            AgentStatus.DONE,
            0,
            2,
            ("status=done but selected node 'leaf' gained children (prev=0, next=2)",),
        ),
        (AgentStatus.RETRY, 0, 0, ()),
        (
            AgentStatus.RETRY,
            0,
            1,
            ("status=retry but selected node 'leaf' gained children (prev=0, next=1)",),
        ),
    ],
)
def test_only_decomposed_gains_children_on_the_selected_node(
    status: AgentStatus, prev_children: int, next_children: int, expected: tuple[str, ...]
) -> None:
    prev = with_leaf_children(prev_children)
    after = with_leaf_children(next_children)

    assert messages(status_findings(prev, after, "leaf", status)) == expected


def test_a_selected_node_missing_after_the_agent_is_a_status_violation() -> None:
    prev = tree("root", tree("leaf", order=0), tree("other", order=1))
    after = tree("root", tree("other", order=1))

    assert messages(status_findings(prev, after, "leaf", AgentStatus.DONE)) == (
        "status=done but selected node 'leaf' missing in next tree",
    )


# ---------------------------------------------------------------- layer 5: child additions

EXECUTE_MODE = None


def two_leaves() -> Node:
    return tree("root", tree("leaf", order=0), tree("other", order=1))


def test_execute_mode_without_new_nodes_is_allowed() -> None:
    edited = tree("root", tree("leaf", order=0, title="edited"), tree("other", order=1))

    assert messages(child_findings(two_leaves(), edited, EXECUTE_MODE)) == ()


@pytest.mark.parametrize("parent", ["leaf", "other", "root"])
def test_execute_mode_allows_no_node_to_gain_a_child(parent: str) -> None:
    after = tree(
        "root",
        tree("leaf", *((tree("new"),) if parent == "leaf" else ()), order=0),
        tree("other", *((tree("new"),) if parent == "other" else ()), order=1),
        *((tree("new", order=2),) if parent == "root" else ()),
    )

    assert messages(child_findings(two_leaves(), after, EXECUTE_MODE)) == (
        f"node '{parent}' gained child 'new' (no node may gain children in execute mode)",
    )


def test_decompose_mode_allows_the_selected_node_to_gain_children() -> None:
    after = tree(
        "root", tree("leaf", tree("leaf.1"), tree("leaf.2", order=1)), tree("other", order=1)
    )

    assert messages(child_findings(two_leaves(), after, "leaf")) == ()


def test_decompose_mode_allows_no_other_node_to_gain_children() -> None:
    after = tree("root", tree("leaf", tree("leaf.1")), tree("other", tree("x"), order=1))

    assert messages(child_findings(two_leaves(), after, "leaf")) == (
        "node 'other' gained child 'x' (only the selected node 'leaf' may gain children)",
    )


def test_decompose_mode_allows_only_direct_children_of_the_selected_node() -> None:
    after = tree("root", tree("leaf", tree("leaf.1", tree("leaf.1.1"))), tree("other", order=1))

    assert messages(child_findings(two_leaves(), after, "leaf")) == (
        "node 'leaf.1' gained child 'leaf.1.1' (only the selected node 'leaf' may gain children)",
    )


@pytest.mark.parametrize("selected", [EXECUTE_MODE, "leaf"])
def test_moving_an_existing_open_node_is_not_an_addition(selected: str | None) -> None:
    after = tree("root", tree("other", tree("leaf"), order=1))

    assert messages(child_findings(two_leaves(), after, selected)) == ()


def test_an_open_node_given_a_new_id_counts_as_a_new_child() -> None:
    after = tree("root", tree("leaf", order=0), tree("renamed", order=1))

    assert messages(child_findings(two_leaves(), after, EXECUTE_MODE)) == (
        "node 'root' gained child 'renamed' (no node may gain children in execute mode)",
    )


def test_every_offending_node_is_named_in_its_own_error_sorted() -> None:
    after = tree(
        "root",
        tree("leaf", tree("y"), order=0),
        tree("other", tree("x", tree("x.1")), order=1),
    )

    assert messages(child_findings(two_leaves(), after, EXECUTE_MODE)) == (
        "node 'leaf' gained child 'y' (no node may gain children in execute mode)",
        "node 'other' gained child 'x' (no node may gain children in execute mode)",
        "node 'x' gained child 'x.1' (no node may gain children in execute mode)",
    )


# ---------------------------------------------------------------- usable ids

BAD_ID = "id must not contain whitespace, '=', '/' or control characters"


@pytest.mark.parametrize(
    ("node_id", "shown"),
    [
        ("a b", "a b"),
        ("a\tb", "a\\tb"),
        ("a\u00a0b", "a\\xa0b"),
        ("a\u3000b", "a\\u3000b"),
        ("key=value", "key=value"),
        ("=", "="),
        ("a/b", "a/b"),
        ("a\nb", "a\\nb"),
        ("a\x1bb", "a\\x1bb"),
        ("a\u2028b", "a\\u2028b"),
    ],
)
def test_an_id_with_whitespace_an_equals_sign_a_slash_or_a_control_character_is_refused(
    node_id: str, shown: str
) -> None:
    root = tree("root", tree(node_id))

    assert messages(invariant_findings(root)) == (f"root/{shown}: {BAD_ID}",)


@pytest.mark.parametrize("node_id", ["a.1", "root-2", "é", "x_y", "+", "ü.ß"])
def test_an_id_of_printable_characters_without_whitespace_equals_or_slash_is_usable(
    node_id: str,
) -> None:
    assert id_problem(node_id) is None
    assert messages(invariant_findings(tree("root", tree(node_id)))) == ()


def test_messages_are_the_findings_lines_in_order_each_once() -> None:
    first = Finding("child_additions", "x", "root/a/x", "child_added_in_execute_mode", "one")
    again = Finding("child_additions", "x", "root/b/x", "child_added_in_execute_mode", "one")
    other = Finding("child_additions", "y", "root/a/y", "child_added_in_execute_mode", "two")

    assert messages((first, again, other)) == ("one", "two")
