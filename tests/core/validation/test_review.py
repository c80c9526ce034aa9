"""review_tree_change: every layer's errors about an agent's change, at once, as values."""

from __future__ import annotations

import json

import attrs
import pytest

from runner_core import ReviewedTree, UnreadableTree
from runner_core.tree.serialization import dumps_tree, tree_to_json
from runner_core.validation.finding import Finding
from runner_core.validation.review import review_tree_change
from tests.helpers.trees import tree

PREV = tree("root", tree("a", passes=True), tree("b", order=1))


def edited() -> str:
    data = tree_to_json(PREV)
    data["children"][0]["title"] = "renamed"
    data["children"][1]["attempts"] = 9
    data["children"][1]["children"] = [{**data["children"][1], "id": "c", "children": []}]
    return json.dumps(data)


def test_every_layer_reports_its_errors_in_the_runners_order() -> None:
    review = review_tree_change(PREV, edited(), "b", "done")

    assert not review.accepted
    assert review.findings == (
        Finding(
            "invariants",
            "c",
            "root/b/c",
            "attempts_exceed_max",
            "root/b/c: attempts 9 exceeds max_attempts 3",
        ),
        Finding(
            "invariants",
            "b",
            "root/b",
            "attempts_exceed_max",
            "root/b: attempts 9 exceeds max_attempts 3",
        ),
        Finding(
            "immutability",
            "a",
            "root/a",
            "passed_node_changed",
            "passed node 'a' changed in next tree",
            ("title",),
        ),
        Finding(
            "status",
            "b",
            "root/b",
            "children_gained",
            "status=done but selected node 'b' gained children (prev=0, next=1)",
        ),
        Finding(
            "child_additions",
            "c",
            "root/b/c",
            "child_added_in_execute_mode",
            "node 'b' gained child 'c' (no node may gain children in execute mode)",
        ),
    )


def test_a_tree_given_as_a_node_is_reviewed_alike() -> None:
    text = edited()
    from_text = review_tree_change(PREV, text, "b", "done")
    assert from_text.tree is not None
    assert review_tree_change(PREV, from_text.tree, "b", "done") == from_text


def test_a_decomposition_may_add_children_under_the_selected_node_only() -> None:
    after = tree("root", tree("a", passes=True), tree("b", tree("b.1"), order=1))
    assert review_tree_change(PREV, after, "b", "decomposed").accepted
    review = review_tree_change(PREV, after, "a", "decomposed")
    assert [(found.layer, found.code) for found in review.findings] == [
        ("status", "no_children_gained"),
        ("child_additions", "child_added_outside_selected"),
    ]


def test_an_unchanged_tree_is_accepted() -> None:
    review = review_tree_change(PREV, dumps_tree(PREV), "b", "retry")
    assert review.accepted
    assert review.tree == PREV


def test_text_that_is_not_json_is_one_finding_and_no_tree() -> None:
    review = review_tree_change(PREV, "{", "b", "done")
    assert review.tree is None
    assert review.findings == (
        Finding(
            "json",
            None,
            None,
            "not_json",
            "Expecting property name enclosed in double quotes at line 1 column 2",
        ),
    )


def test_schema_errors_name_the_node_object_and_its_id() -> None:
    data = tree_to_json(PREV)
    data["children"][1]["order"] = "first"
    del data["children"][0]["goal"]

    review = review_tree_change(PREV, json.dumps(data), "b", "done")

    assert review.tree is None
    assert review.findings == (
        Finding(
            "schema", "a", "$.children[0]", "missing_field", "$.children[0] must contain 'goal'"
        ),
        Finding(
            "schema", "b", "$.children[1]", "invalid_value", "$.children[1].order must be integer"
        ),
    )


@pytest.mark.parametrize(
    ("text", "variant"),
    [
        (dumps_tree(PREV), ReviewedTree),
        (edited(), ReviewedTree),
        ("{", UnreadableTree),
        (json.dumps({"id": "root"}), UnreadableTree),
    ],
)
def test_a_review_is_a_reviewed_tree_exactly_when_the_text_builds_a_tree(
    text: str, variant: type
) -> None:
    assert type(review_tree_change(PREV, text, "b", "done")) is variant


def test_only_a_reviewed_tree_carries_a_tree_and_an_unreadable_one_is_never_accepted() -> None:
    assert [field.name for field in attrs.fields(ReviewedTree)] == ["tree", "findings"]
    assert [field.name for field in attrs.fields(UnreadableTree)] == ["findings"]
    assert UnreadableTree(()).accepted is False
