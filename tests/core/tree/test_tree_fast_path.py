"""Specification of parse_tree's one-pass fast path: the same tree or the same error as the
layer-by-layer path (parse → schema → build → invariants), on any text.

The fast path's node check is generated from schemas/task_tree/v1.schema.json by
scripts/gen_validators.py (tests/test_generated_validators.py keeps it current), so unlike the
hand-written check it replaced, it needs no copy of the node definition pinned here.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core import Node, TreeValidationError, parse_tree
from runner_core.tree.serialization import decode_tree_text, tree_of_plain_nodes
from runner_core.validation.loading import tree_from_valid_json
from tests.helpers.trees import node


def reference(text: str | bytes) -> Node | str:
    """The layer-by-layer path every error message comes from."""
    try:
        return tree_from_valid_json(decode_tree_text(text))
    except TreeValidationError as error:
        return str(error)


def outcome(text: str | bytes) -> Node | str:
    try:
        return parse_tree(text)
    except TreeValidationError as error:
        return str(error)


def sample() -> dict[str, Any]:
    return node(
        "root",
        node("root.1", passes=True, acceptance=["a", "b"]),
        node("root.2", node("root.2.1", order=0), node("root.2.2", order=1), order=1),
        next="decompose",
    )


def test_a_canonical_tree_is_built_in_one_pass() -> None:
    text = json.dumps(sample(), indent=2)
    assert tree_of_plain_nodes(text) == reference(text)


def set_in(path: tuple[Any, ...], value: Any) -> Any:
    def edit(document: dict[str, Any]) -> None:
        target: Any = document
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return edit


def drop(key: str) -> Any:
    return lambda document: document["children"][0].pop(key)


EDITS = {
    "valid": lambda document: None,
    "float order the schema accepts": set_in(("children", 0, "order"), 1.0),
    "fractional order": set_in(("children", 0, "order"), 1.5),
    "bool order": set_in(("order",), True),
    "bool attempts": set_in(("children", 1, "attempts"), False),
    "int passes": set_in(("children", 0, "passes"), 1),
    "missing field": drop("goal"),
    "extra field": set_in(("children", 0, "note"), "x"),
    "empty id": set_in(("children", 0, "id"), ""),
    "numeric id": set_in(("children", 0, "id"), 7),
    "negative attempts": set_in(("children", 0, "attempts"), -1),
    "zero max_attempts": set_in(("children", 0, "max_attempts"), 0),
    "attempts over max": set_in(("children", 0, "attempts"), 9),
    "unknown next": set_in(("next",), "plan"),
    "list next": set_in(("next",), ["execute"]),
    "null title": set_in(("title",), None),
    "number in acceptance": set_in(("children", 0, "acceptance", 1), 3),
    "node in acceptance": set_in(("children", 0, "acceptance", 0), node("x")),
    "array as child": set_in(("children", 1, "children", 0), []),
    "string as child": set_in(("children", 1, "children", 0), "root.2.1"),
    "children not a list": set_in(("children", 1, "children"), {}),
    "duplicate id": set_in(("children", 1, "children", 1, "id"), "root.1"),
    "unsorted children": set_in(("children", 1, "children", 0, "order"), 5),
    "slash in id": set_in(("children", 0, "id"), "a/b"),
    "space in id": set_in(("children", 0, "id"), "a b"),
    "equals sign in id": set_in(("children", 0, "id"), "a=b"),
    "unicode text": set_in(("children", 0, "title"), "é ☃ 𝄞"),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_gives_the_layered_result_for(edit: Any) -> None:
    document = sample()
    edit(document)
    for text in (json.dumps(document, indent=2), json.dumps(document, ensure_ascii=False)):
        assert outcome(text) == reference(text)
        assert outcome(text.encode("utf-8")) == reference(text.encode("utf-8"))


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "null",
        '"root"',
        "{}",
        "{",
        json.dumps(sample()) + " x",
        json.dumps(sample()).replace('"a"', '"\\ud800"'),
        json.dumps(sample()).replace('"a"', '"\\ud83d\\ude00"'),
        json.dumps(sample()).replace('"order": 0', '"order": 1' + "0" * 5000, 1),
        json.dumps(sample()).replace('"order": 0', '"order": 0, "order": 2', 1),
        '[{"id": "x"}]',
    ],
)
def test_gives_the_layered_result_for_odd_text(text: str) -> None:
    assert outcome(text) == reference(text)


def test_a_chain_too_deep_for_json_loads_is_refused_alike_by_both_paths() -> None:
    # Before the depth limit both paths read this 5,000-deep chain into a tree; now
    # both refuse it with the same one line.
    depth = 5000
    # Each node's text up to its open children array, then every array and object closed.
    opened = "".join(json.dumps(node(f"n{i}"))[: -len("]}")] for i in range(depth))
    text = opened + "]}" * depth
    assert (
        outcome(text)
        == reference(text)
        == (
            "tree is not valid JSON: it nests deeper than the JSON reader can follow "
            "(a tree is at most 100 levels deep)"
        )
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.floats(0, 2) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_single_field_change_gives_the_layered_result(data: st.DataObject) -> None:
    document = sample()
    holders: list[dict[str, Any]] = []
    stack = [document]
    while stack:
        item = stack.pop()
        holders.append(item)
        stack.extend(item["children"])
    target = data.draw(st.sampled_from(holders))
    key = data.draw(st.sampled_from([*sorted(target), "extra"]))
    edited = copy.deepcopy(document)
    holder = next(item for item in _walk(edited) if item["id"] == target["id"])
    holder[key] = data.draw(json_values)
    text = json.dumps(edited)
    assert outcome(text) == reference(text)


def _walk(document: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [document]
    while stack:
        item = stack.pop()
        found.append(item)
        children = item.get("children")
        if isinstance(children, list):
            stack.extend(child for child in children if isinstance(child, dict))
    return found
