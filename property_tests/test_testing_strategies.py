"""The guarantees runner_core.testing states for its strategies, each checked as a property."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from pyrsistent import pmap

from runner_core import (
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    SelectionStatus,
    TreeValidationError,
    apply_state_updates,
    dumps_tree,
    parse_tree,
    select_leaf,
    tree_from_json,
)
from runner_core.history.records import record_from_meta, record_to_meta
from runner_core.iteration.plan import PlanKind, plan_step, review_decomposition
from runner_core.run.state import RunState
from runner_core.testing import (
    EditedTree,
    InvalidTree,
    Run,
    agent_edits,
    assert_runner_owned_unchanged,
    assert_transition_allowed,
    assert_valid_tree,
    canonical_texts,
    decomposer_outputs,
    executor_outputs,
    invalid_trees,
    reference_select_leaf,
    runs,
    tree_jsons,
    trees,
)
from runner_core.testing.invalid import WRONG_TYPES
from runner_core.testing.runs import RUN_START
from runner_core.testing.trees import ids, passed_ids, preorder
from runner_core.tree.model import nodes_by_id, sort_children
from runner_core.tree.state_update import TRANSITIONS
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.invariants import id_problem
from runner_core.validation.schema import decomposer_output_findings, executor_output_findings
from tests.helpers.strategies import status_guard_pairs

# A fifth of the profile's examples (a tenth for whole runs): these properties check the
# strategies, not the runner, and the suite's time should stay as it was.
MODEST = settings(max_examples=max(settings().max_examples // 5, 20))
RUNS = settings(max_examples=max(settings().max_examples // 10, 10))


def depth(tree: Node) -> int:
    levels = {tree.id: 0}
    for node, parent in preorder(tree):
        if parent is not None:
            levels[node.id] = levels[parent.id] + 1
    return max(levels.values())


@MODEST
@given(
    st.tuples(st.integers(1, 30), st.booleans()).flatmap(
        lambda case: st.tuples(
            st.just(case), trees(max_nodes=case[0], max_depth=3, canonical=case[1])
        )
    )
)
def test_every_tree_reads_back_through_parse_tree(case: tuple[tuple[int, bool], Node]) -> None:
    """parse_tree(dumps_tree(t)) is t, siblings sorted, for every trees() value (t itself when
    canonical), within max_nodes and max_depth; its parents pass iff all their children pass."""
    (max_nodes, canonical), tree = case
    assert parse_tree(dumps_tree(tree)) == sort_children(tree)
    if canonical:
        assert parse_tree(dumps_tree(tree)) == tree
    assert len(preorder(tree)) <= max_nodes
    assert depth(tree) <= 3
    for node, _ in preorder(tree):
        if node.children:
            assert node.passes == all(child.passes for child in node.children)


@MODEST
@given(trees(passed=True), trees(passed=False), tree_jsons(), canonical_texts())
def test_passed_controls_and_json_forms_hold(
    some: Node, none: Node, document: dict[str, Any], text: str
) -> None:
    """passed=True holds a passed node, passed=False none; tree_jsons() values are valid
    tree data and canonical_texts() values are the canonical text of the tree they parse to."""
    assert passed_ids(some)
    assert not passed_ids(none)
    assert_valid_tree(document)
    assert dumps_tree(parse_tree(text)) == text
    assert assert_valid_tree(tree_from_json(document)) == tree_from_json(document)


@settings(max_examples=10)
@given(trees(max_nodes=200, max_depth=99, max_width=1))
def test_deepest_trees_stay_within_the_depth_cap(tree: Node) -> None:
    """A tree asked for 99 levels below the root has at most that many, and reads back."""
    assert depth(tree) <= 99
    assert_valid_tree(dumps_tree(tree))


def test_bounds_outside_the_contract_are_refused() -> None:
    """A depth beyond the runner's limit, an unknown edit kind or output status is an error."""
    leaf = Node("a", 0, "t", "g", (), NodeNext.EXECUTE, False, 0, 1)
    with pytest.raises(InvalidArgument, match="max_depth=101"):
        trees(max_depth=101)
    with pytest.raises(InvalidArgument, match="max_depth=0"):
        trees(max_depth=0)
    with pytest.raises(InvalidArgument, match="kind must be one of"):
        agent_edits(leaf, kind="some")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="needs a tree with a passed node"):
        agent_edits(leaf, kind="passed")
    with pytest.raises(InvalidArgument, match="max_edits=-1"):
        agent_edits(leaf, kind="open", max_edits=-1)
    with pytest.raises(InvalidArgument, match="status must be"):
        executor_outputs(status="decomposed")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="max_children=0"):
        decomposer_outputs(max_children=0)
    with pytest.raises(InvalidArgument, match="layer must be"):
        invalid_trees(layer="json")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="max_iterations must be"):
        runs(max_iterations=91)


def edited(kind: Any, **options: Any) -> st.SearchStrategy[tuple[Node, EditedTree]]:
    return trees(max_nodes=15, **options).flatmap(
        lambda tree: st.tuples(st.just(tree), agent_edits(tree, kind=kind))
    )


@MODEST
@given(edited("passed", passed=True))
def test_passed_edits_are_reported_by_the_immutability_check(
    case: tuple[Node, EditedTree],
) -> None:
    """Every agent_edits(kind="passed") value is reported, by an error naming `touched`."""
    prev, edit = case
    errors = messages(passed_node_findings(prev, edit.tree))
    assert any(error.startswith(f"passed node '{edit.touched}' ") for error in errors)


@MODEST
@given(edited("open"))
def test_open_edits_are_never_reported(case: tuple[Node, EditedTree]) -> None:
    """No agent_edits(kind="open") value is reported by the immutability check."""
    prev, edit = case
    assert messages(passed_node_findings(prev, edit.tree)) == ()


@MODEST
@given(edited("runner_owned"), status_guard_pairs, st.data())
def test_runner_owned_edits_are_undone_by_the_state_update(
    case: tuple[Node, EditedTree], pair: tuple[AgentStatus, GuardOutcome], data: st.DataObject
) -> None:
    """apply_state_updates gives the same tree whether or not the agent made
    agent_edits(kind="runner_owned") edits, and the same summary but for the fields it lists
    as reverted, which are exactly those edits; only passes/attempts were touched."""
    prev, edit = case
    selected = data.draw(st.sampled_from([node.id for node, _ in preorder(prev)]))
    assert {e.field for e in edit.edits} <= {"passes", "attempts"}
    tree, summary = apply_state_updates(prev, edit.tree, selected, *pair)
    assert (tree, attrs.evolve(summary, reverted=())) == apply_state_updates(
        prev, prev, selected, *pair
    )
    before, after = nodes_by_id(prev), nodes_by_id(edit.tree)
    assert {(field.node_id, field.field) for field in summary.reverted} == {
        (node_id, name)
        for node_id, node in after.items()
        for name in ("passes", "attempts")
        if getattr(node, name) != getattr(before[node_id], name)
    }


@MODEST
@given(edited("runner_owned"))
def test_runner_owned_assertion_fails_exactly_when_a_field_moved(
    case: tuple[Node, EditedTree],
) -> None:
    """assert_runner_owned_unchanged passes for a tree whose passes/attempts are prev's and
    raises, naming a node, for one where an edit moved them."""
    prev, edit = case
    assert_runner_owned_unchanged(prev, prev)
    if edit.tree == prev:
        assert_runner_owned_unchanged(prev, edit.tree)
        return
    with pytest.raises(AssertionError, match=r"^runner-owned fields changed: node '"):
        assert_runner_owned_unchanged(prev, edit.tree)


@MODEST
@given(invalid_trees())
def test_invalid_trees_fail_with_their_stated_message(case: InvalidTree) -> None:
    """parse_tree refuses every invalid_trees() value at its layer with exactly its message,
    and assert_valid_tree raises AssertionError with the runner's line."""
    with pytest.raises(TreeValidationError) as refused:
        parse_tree(case.text)
    assert (refused.value.layer, refused.value.errors) == (case.layer, (case.message,))
    with pytest.raises(AssertionError) as failed:
        assert_valid_tree(case.document)
    assert str(failed.value) == str(refused.value)


@MODEST
@given(
    trees().filter(lambda tree: select_leaf(tree).status is SelectionStatus.OPEN),
    decomposer_outputs(),
    decomposer_outputs(valid=False),
)
def test_decomposer_outputs_are_usable_and_invalid_ones_refused(
    tree: Node, output: Any, broken: Any
) -> None:
    """A decomposer_outputs() value validates and review_decomposition accepts it for the
    selected leaf; a valid=False value fails decomposer_output_findings."""
    assert messages(decomposer_output_findings(output)) == ()
    node = select_leaf(tree).node
    assert node is not None
    review = review_decomposition(tree, node.id, output, 2)
    assert (review.status, review.agent_error) == (AgentStatus.DECOMPOSED, None)
    assert messages(decomposer_output_findings(broken)) != ()


@MODEST
@given(executor_outputs(), executor_outputs(valid=False), executor_outputs(status="retry"))
def test_executor_outputs_validate_and_invalid_ones_fail(
    output: Any, broken: Any, retry: Any
) -> None:
    """executor_outputs() values validate, with the status asked for; valid=False ones fail."""
    assert messages(executor_output_findings(output)) == ()
    assert messages(executor_output_findings(retry)) == () and retry["status"] == "retry"
    assert messages(executor_output_findings(broken)) != ()


@RUNS
@given(runs())
def test_runs_are_valid_by_construction(run: Run) -> None:
    """Every tree of a run is valid and canonical; records are iterations 1..n of the run,
    round-trip through meta.json, number each node's executions 1, 2, ..., are rows of the
    table, move attempts as the tree did, are counted in the run state, last their duration
    one after the other, and each iteration that was not a runner error is
    a transition assert_transition_allowed accepts. The run ends as plan_step says."""
    executions: dict[str, int] = {}
    prev = run.initial
    last_ended = RUN_START
    for number, step in enumerate(run.steps, start=1):
        assert dumps_tree(assert_valid_tree(step.tree)) == dumps_tree(step.tree)
        record = step.record
        assert (record.iteration, record.run_id) == (number, run.run_id)
        assert record_from_meta(record_to_meta(record)) == record
        executions[record.node_id] = executions.get(record.node_id, 0) + 1
        assert record.execution == executions[record.node_id]
        assert (record.status, record.guard) in TRANSITIONS
        assert step.state.next_iter == number + 1
        assert step.state.executions == pmap(executions)
        started, ended = (datetime.fromisoformat(t) for t in (record.started_at, record.ended_at))
        assert ended - started == timedelta(milliseconds=record.duration_ms)
        assert started >= last_ended
        last_ended = ended
        if step.outcome.runner_error is not None:
            assert step.tree == prev and not record.consumed_attempt
        else:
            assert_transition_allowed(prev, step.tree, record.node_id, record.status, record.guard)
        prev = step.tree
    assert len(run.history) == len(run.steps)
    assert run.trees == (run.initial, *(step.tree for step in run.steps))
    if run.end is not PlanKind.LIMIT:
        state = run.steps[-1].state if run.steps else RunState(run_id=run.run_id)
        assert plan_step(prev, state, 10**6).kind is run.end


@MODEST
@given(trees(canonical=None, derived_passes=False))
def test_reference_select_leaf_is_select_leaf(tree: Node) -> None:
    """The oracle gives select_leaf's Selection, the very same leaf object."""
    reference = reference_select_leaf(tree)
    assert reference == select_leaf(tree)
    assert reference.node is select_leaf(tree).node


# ---------------------------------------------------------------- every control is respected

controls = st.integers(1, 6)


@MODEST
@given(controls.flatmap(lambda limit: st.tuples(st.just(limit), trees(max_depth=limit))))
def test_trees_have_at_most_max_depth_levels(case: tuple[int, Node]) -> None:
    """trees(max_depth=d) has at most d levels, the root alone being one (as MAX_DEPTH)."""
    limit, tree = case
    assert depth(tree) + 1 <= limit


@MODEST
@given(controls.flatmap(lambda limit: st.tuples(st.just(limit), trees(max_nodes=limit))))
def test_trees_have_at_most_max_nodes_nodes(case: tuple[int, Node]) -> None:
    """trees(max_nodes=n) has at most n nodes."""
    limit, tree = case
    assert len(preorder(tree)) <= limit


@MODEST
@given(
    st.integers(0, 5).flatmap(
        lambda limit: st.tuples(st.just(limit), trees(max_width=limit, max_nodes=40))
    )
)
def test_trees_have_at_most_max_width_children_per_node(case: tuple[int, Node]) -> None:
    """trees(max_width=w) gives no node more than w children."""
    limit, tree = case
    assert all(len(node.children) <= limit for node, _ in preorder(tree))


@MODEST
@given(trees(max_nodes=30))
def test_tree_ids_are_usable_and_unique(tree: Node) -> None:
    """Every generated id is one the runner accepts (no whitespace, `=`, `/` or control
    characters), and no two nodes share one."""
    found = [node.id for node, _ in preorder(tree)]
    assert all(id_problem(node_id) is None for node_id in found)
    assert len(set(found)) == len(found)


@MODEST
@given(trees(max_nodes=30, ascii_ids=True))
def test_ascii_ids_keeps_every_id_to_ascii(tree: Node) -> None:
    """trees(ascii_ids=True) draws every id from ASCII alone."""
    assert all(node.id.isascii() for node, _ in preorder(tree))


def test_ids_reach_beyond_latin_1() -> None:
    """Ids are drawn from all of Unicode an id may hold, so a tool that drops characters
    outside Latin-1 is caught."""
    found = find(ids, lambda node_id: any(ord(char) > 0xFF for char in node_id))
    assert id_problem(found) is None


def test_the_testing_tables_cannot_be_changed_in_place() -> None:
    """The tables runner_core.testing exports are read-only."""
    with pytest.raises(TypeError):
        WRONG_TYPES["id"] = ("string", ())  # type: ignore[index]
