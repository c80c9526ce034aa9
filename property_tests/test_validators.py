"""Properties of the validation layers."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runner_core import AgentStatus, Node, tree_from_json
from runner_core.testing import EditedTree, agent_edits, tree_jsons, trees
from runner_core.testing.trees import preorder
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import id_problem, invariant_findings
from runner_core.validation.schema import schema_findings
from runner_core.validation.status import status_findings
from tests.helpers import SCHEMAS
from tests.helpers.strategies import invariant_breaking_trees, mutated_tree_jsons

SCHEMA_FILE = SCHEMAS / "task_tree" / "v1.schema.json"
REFERENCE = Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
NODE_OF_PATH = re.compile(r"^\$(?:\.children\[\d+\])*")


def node_of(json_path: str) -> str:
    """The JSON path of the tree node an error is about: `$.children[0].order` → `$.children[0]`."""
    found = NODE_OF_PATH.match(json_path)
    assert found is not None, json_path
    return found.group()


def path_of(message: str) -> str:
    """The JSON path a schema_findings message starts with."""
    return message.split(" ", 1)[0].rstrip(":")


# ---------------------------------------------------------------- 7. passed-node immutability


@st.composite
def trees_with_open_edits(draw: st.DrawFn) -> tuple[Node, EditedTree]:
    tree = draw(trees(max_nodes=15))
    return tree, draw(agent_edits(tree, kind="open", max_edits=4))


@given(trees_with_open_edits())
def test_edits_confined_to_open_nodes_are_never_reported(case: tuple[Node, EditedTree]) -> None:
    """Retitling, re-goaling, reordering, removing, moving, adding and rewriting passes/attempts
    of open nodes leaves every passed node in place and unchanged: no immutability error."""
    prev, edited = case
    assert messages(passed_node_findings(prev, edited.tree)) == ()


@st.composite
def trees_with_a_passed_edit(draw: st.DrawFn) -> tuple[Node, EditedTree]:
    tree = draw(trees(max_nodes=15, passed=True))
    return tree, draw(agent_edits(tree, kind="passed", max_edits=4))


@given(trees_with_a_passed_edit())
def test_any_edit_to_a_passed_node_is_reported(case: tuple[Node, EditedTree]) -> None:
    """An edit that changes, removes, moves or adds a child to a passed node is reported, and
    an error names that node (alone or among others it disturbed)."""
    prev, edited = case
    errors = messages(passed_node_findings(prev, edited.tree))
    assert errors
    assert any(f"passed node '{edited.touched}' " in error for error in errors)


# ---------------------------------------------------------------- 8. schema against jsonschema


@given(mutated_tree_jsons())
def test_schema_findings_agrees_with_jsonschema(document: Any) -> None:
    """schema_findings reports errors iff the jsonschema library (Draft 2020-12, the schema
    file) finds the document invalid, and the tree nodes it names are exactly the nodes where
    jsonschema finds an error."""
    errors = messages(schema_findings(document))
    reference = list(REFERENCE.iter_errors(document))
    assert bool(errors) == bool(reference)
    assert {node_of(path_of(error)) for error in errors} == {
        node_of(error.json_path) for error in reference
    }


@given(tree_jsons(max_nodes=15))
def test_valid_trees_pass_every_validator(document: dict[str, Any]) -> None:
    """The strategy's trees are valid for jsonschema, schema_findings and invariant_findings."""
    assert REFERENCE.is_valid(document)
    assert messages(schema_findings(document)) == ()
    assert messages(invariant_findings(tree_from_json(document))) == ()


# ---------------------------------------------------------------- 9. stable, sorted output


def assert_sorted_and_repeatable(first: tuple[str, ...], second: tuple[str, ...]) -> None:
    assert isinstance(first, tuple)
    assert first == second
    assert list(first) == sorted(first)


@given(mutated_tree_jsons())
def test_schema_errors_are_sorted_and_repeatable(document: Any) -> None:
    """schema_findings returns the same sorted tuple every time it is asked."""
    assert_sorted_and_repeatable(
        messages(schema_findings(document)), messages(schema_findings(document))
    )


@given(invariant_breaking_trees())
def test_invariant_errors_are_sorted_and_repeatable(tree: Node) -> None:
    """invariant_findings returns the same sorted tuple every time it is asked."""
    assert_sorted_and_repeatable(
        messages(invariant_findings(tree)), messages(invariant_findings(tree))
    )


@st.composite
def trees_with_agent_edits(draw: st.DrawFn) -> tuple[Node, EditedTree]:
    tree = draw(trees(max_nodes=15))
    return tree, draw(agent_edits(tree))


IMMUTABILITY_ID = re.compile(r"^passed node '(.*?)' ")


@given(trees_with_agent_edits())
def test_immutability_errors_are_sorted_by_node_id_and_repeatable(
    case: tuple[Node, EditedTree],
) -> None:
    """passed_node_findings returns the same tuple every time, sorted by node id."""
    prev, edited = case
    first = messages(passed_node_findings(prev, edited.tree))
    assert first == messages(passed_node_findings(prev, edited.tree))

    # An id may hold a quote itself (`'`): the message's id is the longest known id it names.
    ids = sorted({node.id for node, _ in preorder(prev)}, key=len, reverse=True)

    def key(message: str) -> tuple[str, str]:
        shown = IMMUTABILITY_ID.match(message)
        assert shown is not None, message
        found = next((i for i in ids if message.startswith(f"passed node '{i}' ")), None)
        return found if found is not None else shown.group(1), message

    assert list(first) == sorted(first, key=key)


@given(trees_with_agent_edits(), st.data())
def test_status_and_child_addition_errors_are_sorted_and_repeatable(
    case: tuple[Node, EditedTree], data: st.DataObject
) -> None:
    """status_findings and child_findings return the same
    sorted tuple every time they are asked."""
    prev, edited = case
    ids = sorted(node.id for node, _ in preorder(prev))
    selected = data.draw(st.sampled_from(ids))
    status = data.draw(st.sampled_from(AgentStatus))
    assert_sorted_and_repeatable(
        messages(status_findings(prev, edited.tree, selected, status)),
        messages(status_findings(prev, edited.tree, selected, status)),
    )
    decomposing = data.draw(st.sampled_from([None, selected]))
    assert_sorted_and_repeatable(
        messages(child_findings(prev, edited.tree, decomposing)),
        messages(child_findings(prev, edited.tree, decomposing)),
    )


@given(st.text(min_size=1, max_size=8))
def test_an_id_is_usable_exactly_when_it_has_no_whitespace_equals_slash_or_control(
    node_id: str,
) -> None:
    """id_problem(i) is None exactly when i holds no whitespace, '=', '/' or control character."""
    usable = not any(
        char.isspace() or char in "=/" or unicodedata.category(char) == "Cc" for char in node_id
    )
    assert (id_problem(node_id) is None) == usable
