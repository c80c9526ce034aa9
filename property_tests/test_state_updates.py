"""Properties of apply_state_updates: the runner alone owns passes/attempts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner_core import (
    AgentStatus,
    GuardOutcome,
    InvalidTransition,
    Node,
    apply_state_updates,
    dumps_tree,
    tree_to_json,
)
from runner_core.testing import EditedTree, agent_edits, trees
from runner_core.testing.trees import preorder
from runner_core.tree.state_update import UnknownSelectedNode
from runner_core.validation.finding import messages
from runner_core.validation.invariants import invariant_findings
from tests.helpers.strategies import STATUS_GUARD_PAIRS, status_guard_pairs

# The transition table, written out again so the test does not read the code's own copy:
# (status, guard) -> (sets passes, increments attempts).
SPEC_TABLE: dict[tuple[AgentStatus, GuardOutcome], tuple[bool, bool]] = {
    (AgentStatus.DONE, GuardOutcome.PASS): (True, False),
    (AgentStatus.DONE, GuardOutcome.FAIL): (False, True),
    (AgentStatus.DONE, GuardOutcome.SKIPPED): (False, False),
    (AgentStatus.RETRY, GuardOutcome.SKIPPED): (False, True),
    (AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED): (False, False),
}


@st.composite
def updates(
    draw: st.DrawFn, *, touch_passed: bool = True
) -> tuple[Node, EditedTree, str, AgentStatus, GuardOutcome]:
    """prev, the agent's edited tree, a selected id present in it, and a status/guard pair.

    The selected id is any node of the edited tree: the real case (prev's leftmost open
    leaf) is one of them, and the function's contract covers them all.
    """
    prev = draw(trees(max_nodes=15, canonical=None))
    edited = draw(agent_edits(prev, kind="any" if touch_passed else ("open", "runner_owned")))
    ids = sorted(node.id for node, _ in preorder(edited.tree))
    selected = draw(st.sampled_from(ids))
    status, guard = draw(status_guard_pairs)
    return prev, edited, selected, status, guard


def owned(tree: Node) -> dict[str, tuple[bool, int]]:
    return {node.id: (node.passes, node.attempts) for node, _ in preorder(tree)}


def max_attempts_of(tree: Node) -> dict[str, int]:
    return {node.id: node.max_attempts for node, _ in preorder(tree)}


def expected_runner_fields(
    prev: Node, next_tree: Node, selected: str, status: AgentStatus, guard: GuardOutcome
) -> tuple[dict[str, tuple[bool, int]], set[str], set[str], set[str]]:
    """The state update's steps 1-3 (reset, table, derive) done by hand on `next_tree`.

    Returns (id -> expected (passes, attempts), passes set, attempts incremented, derived set).
    """
    before = owned(prev)
    limits = max_attempts_of(prev)
    sets_passes, increments = SPEC_TABLE[(status, guard)]
    expected: dict[str, tuple[bool, int]] = {}
    passes_set: set[str] = set()
    incremented: set[str] = set()
    derived: set[str] = set()

    def visit(node: Node) -> bool:
        child_passes = [visit(child) for child in node.children]
        passes, attempts = before.get(node.id, (False, 0))
        if node.id == selected:
            if sets_passes and not passes:
                passes = True
                passes_set.add(node.id)
            if increments and attempts < limits.get(node.id, node.max_attempts):
                attempts += 1
                incremented.add(node.id)
        if node.children:
            if all(child_passes) and not passes:
                derived.add(node.id)
            passes = all(child_passes)
        expected[node.id] = (passes, attempts)
        return passes

    visit(next_tree)
    return expected, passes_set, incremented, derived


@given(updates())
def test_apply_state_updates_is_deterministic_and_pure(
    case: tuple[Node, EditedTree, str, AgentStatus, GuardOutcome],
) -> None:
    """Same inputs give equal trees, identical canonical text and equal summaries, and the
    inputs are unchanged afterwards (compared as JSON, siblings in stored order)."""
    prev, edited, selected, status, guard = case
    prev_before, next_before = tree_to_json(prev), tree_to_json(edited.tree)
    first = apply_state_updates(prev, edited.tree, selected, status, guard)
    second = apply_state_updates(prev, edited.tree, selected, status, guard)
    assert first == second
    assert dumps_tree(first[0]) == dumps_tree(second[0])
    assert tree_to_json(prev) == prev_before
    assert tree_to_json(edited.tree) == next_before


@given(updates())
def test_agent_edits_to_runner_owned_fields_never_survive(
    case: tuple[Node, EditedTree, str, AgentStatus, GuardOutcome],
) -> None:
    """Every node's passes/attempts after the update are prev's (False/0 for new nodes), then
    the table's one transition on the selected node, then derived passes for parents: nothing
    the agent wrote into those fields survives. The summary lists exactly those changes."""
    prev, edited, selected, status, guard = case
    tree, summary = apply_state_updates(prev, edited.tree, selected, status, guard)
    expected, passes_set, incremented, derived = expected_runner_fields(
        prev, edited.tree, selected, status, guard
    )
    assert owned(tree) == expected
    assert (summary.status, summary.guard) == (status, guard)
    assert summary.passes_set == tuple(sorted(passes_set))
    assert summary.attempts_incremented == tuple(sorted(incremented))
    assert summary.derived_passes_set == tuple(sorted(derived))


@given(updates())
def test_max_attempts_of_an_existing_node_is_never_the_agents(
    case: tuple[Node, EditedTree, str, AgentStatus, GuardOutcome],
) -> None:
    """An existing node's max_attempts after the update is prev's, whatever the
    agent wrote; a node the agent added keeps the max_attempts it was given."""
    prev, edited, selected, status, guard = case
    tree, _ = apply_state_updates(prev, edited.tree, selected, status, guard)
    before, given_by_agent = max_attempts_of(prev), max_attempts_of(edited.tree)
    assert max_attempts_of(tree) == {
        node_id: before.get(node_id, limit) for node_id, limit in given_by_agent.items()
    }


@given(updates(touch_passed=False))
def test_attempts_stay_within_max_and_change_only_on_the_selected_node(
    case: tuple[Node, EditedTree, str, AgentStatus, GuardOutcome],
) -> None:
    """attempts <= max_attempts everywhere after the update; a node of prev keeps its attempts
    unless it is the selected node, whose attempts grow by at most one.

    The agent edits open nodes and rewrites passes/attempts; it never lowers a max_attempts
    below the attempts already used (review_execution refuses such a tree).
    """
    prev, edited, selected, status, guard = case
    tree, _ = apply_state_updates(prev, edited.tree, selected, status, guard)
    before = owned(prev)
    for node, _ in preorder(tree):
        assert 0 <= node.attempts <= node.max_attempts
        if node.id not in before:
            assert node.attempts <= (1 if node.id == selected else 0)
        elif node.id == selected:
            assert node.attempts - before[node.id][1] in (0, 1)
        else:
            assert node.attempts == before[node.id][1]
    assert messages(invariant_findings(tree)) == ()


@given(updates())
def test_every_parent_passes_iff_all_its_children_pass(
    case: tuple[Node, EditedTree, str, AgentStatus, GuardOutcome],
) -> None:
    """After the update every parent passes iff all its children pass, whatever the agent
    wrote, and siblings are in canonical (order, id) order."""
    prev, edited, selected, status, guard = case
    tree, _ = apply_state_updates(prev, edited.tree, selected, status, guard)
    for node, _ in preorder(tree):
        if node.children:
            assert node.passes == all(child.passes for child in node.children)
        keys = [(child.order, child.id) for child in node.children]
        assert keys == sorted(keys)


INVALID_PAIRS = [
    (status, guard)
    for status in AgentStatus
    for guard in GuardOutcome
    if (status, guard) not in STATUS_GUARD_PAIRS
]


@given(trees(max_nodes=8), st.sampled_from(INVALID_PAIRS))
def test_pairs_outside_the_table_are_refused(
    tree: Node, pair: tuple[AgentStatus, GuardOutcome]
) -> None:
    """A status/guard pair that is not a row of the transition table raises InvalidTransition."""
    with pytest.raises(InvalidTransition):
        apply_state_updates(tree, tree, tree.id, *pair)


@given(trees(max_nodes=8), status_guard_pairs)
def test_an_unknown_selected_node_is_refused(
    tree: Node, pair: tuple[AgentStatus, GuardOutcome]
) -> None:
    """Selecting an id the next tree does not hold raises UnknownSelectedNode."""
    with pytest.raises(UnknownSelectedNode):
        apply_state_updates(tree, tree, "~absent", *pair)
