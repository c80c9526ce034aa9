"""Specification of runner_core.tree.plain: the reading `runner select` and `validate` ask
first. Whenever it answers, `parse_tree` accepts the same text and `select_leaf` finds the same
leaf (`plain_answer`); it may give up (None) on any text, and does on every invalid tree, so
the caller's `parse_tree` words the error.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner_core import TreeValidationError, parse_tree
from runner_core.testing.trees import canonical_texts
from runner_core.tree.plain import Leaf, PlainTree, read_plain_tree
from runner_core.tree.selection import plain_answer
from tests.core.tree.test_tree_fast_path import EDITS, _walk, json_values, sample
from tests.helpers.trees import node


def parsed_answer(text: str) -> PlainTree | str:
    try:
        return plain_answer(parse_tree(text))
    except TreeValidationError as error:
        return str(error)


def agrees(text: str) -> bool:
    """The plain reading gave up, or said what the parsed tree says."""
    answer = read_plain_tree(text.encode("utf-8"))
    return answer is None or answer == parsed_answer(text)


def test_a_canonical_tree_is_answered_with_its_next_leaf() -> None:
    text = json.dumps(sample(), indent=2)
    answer = read_plain_tree(text.encode())
    assert answer == PlainTree(5, Leaf("root.2.1", "root/root.2/root.2.1", 0, 3))
    assert answer == parsed_answer(text)


def test_a_finished_tree_has_no_next_leaf_and_a_stuck_one_says_so() -> None:
    done = json.dumps(node("root", node("a", passes=True), passes=True))
    assert read_plain_tree(done.encode()) == PlainTree(2, None) == parsed_answer(done)
    stuck = json.dumps(node("root", node("a", attempts=3)))
    answer = read_plain_tree(stuck.encode())
    assert answer is not None and answer.next_leaf is not None and answer.next_leaf.stuck
    assert answer == parsed_answer(stuck)


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_answers_as_the_parsed_tree_or_not_at_all_for(edit: Any) -> None:
    document = sample()
    edit(document)
    for text in (json.dumps(document, indent=2), json.dumps(document, ensure_ascii=False)):
        assert agrees(text)
        if isinstance(parsed_answer(text), str):  # every invalid tree is left to parse_tree
            assert read_plain_tree(text.encode("utf-8")) is None


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "{}",
        "",
        json.dumps(sample()) + " x",
        json.dumps(sample()).replace('"a"', '"\\ud800"'),
        json.dumps(sample()).replace('"order": 0', '"order": 0, "order": 2', 1),
        json.dumps(node("root", node("a" * 1001))),
        json.dumps(node("root", node("a\u0085b"))),
    ],
)
def test_gives_up_on_odd_or_invalid_text(text: str) -> None:
    assert read_plain_tree(text.encode("utf-8")) is None


def test_gives_up_on_bytes_that_are_not_utf8() -> None:
    assert read_plain_tree(json.dumps(sample()).encode() + b"\xff") is None


def test_a_tree_deeper_than_the_limit_is_left_to_parse_tree() -> None:
    deepest: dict[str, Any] = node("n100")
    for depth in range(99, -1, -1):
        deepest = node(f"n{depth}", deepest)
    text = json.dumps(deepest)
    assert isinstance(parsed_answer(text), str)
    assert read_plain_tree(text.encode()) is None


@settings(max_examples=100, deadline=None)
@given(canonical_texts())
def test_any_canonical_tree_is_answered_as_the_parsed_tree(text: str) -> None:
    assert read_plain_tree(text.encode("utf-8")) == parsed_answer(text)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_single_field_change_is_answered_as_the_parsed_tree_or_not_at_all(
    data: st.DataObject,
) -> None:
    edited = copy.deepcopy(sample())
    holder = data.draw(st.sampled_from(_walk(edited)))
    key = data.draw(st.sampled_from([*sorted(holder), "extra"]))
    holder[key] = data.draw(json_values)
    assert agrees(json.dumps(edited))
