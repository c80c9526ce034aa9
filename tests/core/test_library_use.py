"""runner_core as a library user meets it: constructors that check their fields, enums that
are their strings, and a state update that says what it reverted (README "The library")."""

from __future__ import annotations

import enum
import importlib
import json
import pkgutil
from typing import Any

import pytest

import runner_core
from runner_core.tree.decompose import ChildSpec
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, NodeNext
from runner_core.tree.serialization import TreeValidationError, dumps_tree
from runner_core.tree.state_update import (
    RevertedField,
    apply_state_updates,
    state_update_summary_to_json,
)
from runner_core.validation.finding import messages
from runner_core.validation.loading import tree_from_json
from runner_core.validation.status import status_findings
from tests.helpers.trees import tree

FIELDS: dict[str, Any] = {
    "id": "a",
    "order": 0,
    "title": "t",
    "goal": "g",
    "acceptance": ["x"],
    "next": "execute",
    "passes": False,
    "attempts": 0,
    "max_attempts": 3,
}


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"attempts": -1}, ValueError, "Node.attempts must be at least 0, not -1"),
        ({"max_attempts": -2}, ValueError, "Node.max_attempts must be at least 0, not -2"),
        ({"id": ""}, ValueError, "Node.id must not be empty"),
        ({"id": 7}, TypeError, "Node.id must be a str, not int"),
        ({"order": "1"}, TypeError, "Node.order must be an int, not str"),
        ({"order": True}, TypeError, "Node.order must be an int, not bool"),
        ({"title": None}, TypeError, "Node.title must be a str, not NoneType"),
        ({"goal": b"g"}, TypeError, "Node.goal must be a str, not bytes"),
        ({"acceptance": "x"}, TypeError, "Node.acceptance must be an iterable of str, not str"),
        ({"acceptance": ["x", 1]}, TypeError, "Node.acceptance[1] must be a str, not int"),
        ({"next": "run"}, ValueError, "Node.next must be 'execute' or 'decompose', not 'run'"),
        ({"next": None}, TypeError, "Node.next must be a NodeNext or its value, not NoneType"),
        ({"passes": 1}, TypeError, "Node.passes must be a bool, not int"),
        ({"attempts": 1.0}, TypeError, "Node.attempts must be an int, not float"),
        ({"children": [{"id": "b"}]}, TypeError, "Node.children[0] must be a Node, not dict"),
    ],
)
def test_a_node_refuses_a_field_of_the_wrong_type_or_range_naming_it(
    changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as refused:
        Node(**{**FIELDS, **changes})
    assert str(refused.value) == message


def test_the_issues_node_fails_at_construction_naming_attempts() -> None:
    child = Node(**FIELDS)
    with pytest.raises(ValueError, match="attempts"):
        Node(**{**FIELDS, "passes": 0, "attempts": -1, "children": [child]})


def test_a_node_names_every_refused_field_at_once() -> None:
    with pytest.raises(TypeError) as refused:
        Node(**{**FIELDS, "passes": 0, "attempts": -1})
    assert isinstance(refused.value, ValueError)
    assert str(refused.value) == (
        "Node.passes must be a bool, not int; Node.attempts must be at least 0, not -1"
    )


def test_a_node_keeps_lists_as_tuples_and_reads_next_from_its_string() -> None:
    child = Node(**{**FIELDS, "id": "b"})
    node = Node(**{**FIELDS, "children": [child]})

    assert node.acceptance == ("x",)
    assert node.children == (child,)
    assert node.next is NodeNext.EXECUTE
    assert dumps_tree(node) == dumps_tree(tree_from_json(json.loads(dumps_tree(node))))


def test_a_node_built_in_code_equals_the_node_parsed_from_its_text() -> None:
    node = Node(**FIELDS)
    assert tree_from_json(json.loads(dumps_tree(node))) == node


def test_tree_from_json_refuses_schema_invalid_data_with_the_librarys_error() -> None:
    with pytest.raises(TreeValidationError) as refused:
        tree_from_json({**FIELDS, "attempts": -1, "children": []})
    assert isinstance(refused.value, ValueError)
    assert refused.value.layer == "schema"
    assert refused.value.errors == ("$.attempts must be bigger than or equal to 0",)


# ---------------------------------------------------------------- enums are their strings


def test_every_enum_of_runner_core_but_the_exit_codes_is_a_str_enum() -> None:
    found = set()
    for info in pkgutil.walk_packages(runner_core.__path__, "runner_core."):
        if info.name.startswith("runner_core.testing"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, enum.Enum)
                and value.__module__ == module.__name__
                and not issubclass(value, enum.StrEnum | enum.IntEnum)
            ):
                found.add(f"{module.__name__}.{name}")
    assert found == set()


def test_an_enum_compares_equal_to_its_string() -> None:
    assert AgentStatus.DONE == "done"  # type: ignore[comparison-overlap]
    assert GuardOutcome("pass") is GuardOutcome.PASS
    assert f"{NodeNext.DECOMPOSE}" == "decompose"


def test_the_state_update_takes_status_and_guard_as_strings() -> None:
    prev = tree("root", tree("a"))
    assert apply_state_updates(prev, prev, "a", "done", "pass") == apply_state_updates(
        prev, prev, "a", AgentStatus.DONE, GuardOutcome.PASS
    )


def test_the_status_check_takes_the_status_as_a_string() -> None:
    prev = tree("root", tree("a"))
    assert messages(status_findings(prev, prev, "a", "decomposed")) == (
        "status=decomposed but selected node 'a' did not gain children (prev=0, next=0)",
    )


# ---------------------------------------------------------------- the state update's summary


def test_the_summary_lists_every_runner_owned_field_the_agent_wrote() -> None:
    prev = tree("root", tree("a", attempts=1), tree("b"))
    edited = tree("root", tree("a", attempts=0, passes=True), tree("b", max_attempts=9))

    _, summary = apply_state_updates(prev, edited, "a", "done", "fail")

    assert summary.reverted == (
        RevertedField("a", "attempts", 1, 0),
        RevertedField("a", "passes", False, True),
        RevertedField("b", "max_attempts", 3, 9),
    )


def test_the_summarys_json_is_canonical() -> None:
    prev = tree("root", tree("a", attempts=1))
    edited = tree("root", tree("a", passes=True))

    _, summary = apply_state_updates(prev, edited, "a", "done", "fail")

    assert state_update_summary_to_json(summary) == {
        "status": "done",
        "guard": "fail",
        "passes_set": [],
        "attempts_incremented": ["a"],
        "derived_passes_set": [],
        "reverted": [
            {"node": "a", "field": "attempts", "old": 1, "new": 0},
            {"node": "a", "field": "passes", "old": False, "new": True},
        ],
    }


def test_a_child_spec_takes_next_as_a_string_and_acceptance_as_a_list() -> None:
    spec = ChildSpec("t", "g", ["works"], "decompose")
    assert spec == ChildSpec("t", "g", ("works",), NodeNext.DECOMPOSE)
