"""Specification of runner-owned state updates.

`apply_state_updates(prev, next, selected, status, guard)` resets `passes`/`attempts` from
`prev`, applies the transition table to the selected node (saturating at
`max_attempts`), derives parents' `passes` bottom-up and returns the tree in canonical order.
"""

from __future__ import annotations

import pytest

from runner_core import (
    AgentStatus,
    GuardOutcome,
    InvalidTransition,
    Node,
    apply_state_updates,
    dumps_tree,
)
from runner_core.tree.state_update import TRANSITIONS, UnknownSelectedNode
from tests.helpers.trees import find, ids, tree

DONE, RETRY, DECOMPOSED = AgentStatus.DONE, AgentStatus.RETRY, AgentStatus.DECOMPOSED
PASS, FAIL, SKIPPED = GuardOutcome.PASS, GuardOutcome.FAIL, GuardOutcome.SKIPPED


def one_leaf(attempts: int = 1, max_attempts: int = 3) -> Node:
    return tree("root", tree("leaf", attempts=attempts, max_attempts=max_attempts))


# ---------------------------------------------------------------- the transition table

SEED_000_TABLE = [
    # status, guard, passes after, attempts after (from attempts 1 of 3)
    (DONE, PASS, True, 1),
    (DONE, FAIL, False, 2),
    (DONE, SKIPPED, False, 1),
    (RETRY, SKIPPED, False, 2),
    (DECOMPOSED, SKIPPED, False, 1),
]


@pytest.mark.parametrize(("status", "guard", "passes", "attempts"), SEED_000_TABLE)
def test_the_selected_node_follows_seed_000s_transition_table(
    status: AgentStatus, guard: GuardOutcome, passes: bool, attempts: int
) -> None:
    updated, _ = apply_state_updates(one_leaf(), one_leaf(), "leaf", status, guard)

    leaf = find(updated, "leaf")
    assert (leaf.passes, leaf.attempts) == (passes, attempts)


@pytest.mark.parametrize(("status", "guard", "passes", "attempts"), SEED_000_TABLE)
def test_the_summary_names_what_the_transition_changed(
    status: AgentStatus, guard: GuardOutcome, passes: bool, attempts: int
) -> None:
    _, summary = apply_state_updates(one_leaf(), one_leaf(), "leaf", status, guard)

    assert summary.status is status
    assert summary.guard is guard
    assert summary.passes_set == (("leaf",) if passes else ())
    assert summary.attempts_incremented == (("leaf",) if attempts == 2 else ())


def test_the_transition_table_has_exactly_the_rows_of_seed_000() -> None:
    assert set(TRANSITIONS) == {(status, guard) for status, guard, _, _ in SEED_000_TABLE}


@pytest.mark.parametrize(
    ("status", "guard"),
    [(RETRY, PASS), (RETRY, FAIL), (DECOMPOSED, PASS), (DECOMPOSED, FAIL)],
)
def test_a_status_and_guard_pair_outside_the_table_is_an_invalid_transition(
    status: AgentStatus, guard: GuardOutcome
) -> None:
    with pytest.raises(InvalidTransition) as raised:
        apply_state_updates(one_leaf(), one_leaf(), "leaf", status, guard)

    assert str(raised.value) == f"no transition for status={status.value} guard={guard.value}"


# ---------------------------------------------------------------- saturation


@pytest.mark.parametrize(("status", "guard"), [(DONE, FAIL), (RETRY, SKIPPED)])
def test_attempts_increment_only_while_below_max_attempts(
    status: AgentStatus, guard: GuardOutcome
) -> None:
    prev = one_leaf(attempts=2, max_attempts=3)

    once, first = apply_state_updates(prev, prev, "leaf", status, guard)
    twice, second = apply_state_updates(once, once, "leaf", status, guard)

    assert find(once, "leaf").attempts == 3
    assert first.attempts_incremented == ("leaf",)
    assert find(twice, "leaf").attempts == 3
    assert second.attempts_incremented == ()


def test_done_with_failed_guard_increments_attempts_until_saturation() -> None:
    current = one_leaf(attempts=0, max_attempts=2)
    seen = []
    for _ in range(4):
        current, _ = apply_state_updates(current, current, "leaf", DONE, FAIL)
        seen.append(find(current, "leaf").attempts)

    assert seen == [1, 2, 2, 2]


# ---------------------------------------------------------------- runner-owned fields


def test_agent_edits_of_passes_and_attempts_are_reset_from_the_previous_tree() -> None:
    prev = tree(
        "root",
        tree("done", passes=True, attempts=1, order=0),
        tree("leaf", attempts=2, order=1),
        tree("other", attempts=1, order=2),
    )
    edited = tree(
        "root",
        tree("done", passes=False, attempts=0, order=0),
        tree("leaf", passes=True, attempts=0, order=1),
        tree("other", passes=True, attempts=3, order=2),
        passes=True,
    )

    updated, _ = apply_state_updates(prev, edited, "leaf", DONE, SKIPPED)

    assert [(n.id, n.passes, n.attempts) for n in updated.children] == [
        ("done", True, 1),
        ("leaf", False, 2),
        ("other", False, 1),
    ]
    assert not updated.passes


def test_nodes_new_in_the_next_tree_start_open_with_no_attempts() -> None:
    prev = one_leaf()
    decomposed = tree(
        "root",
        tree(
            "leaf",
            tree("leaf.1", passes=True, attempts=2, order=0),
            tree("leaf.2", passes=False, attempts=1, order=1),
            attempts=1,
        ),
    )

    updated, _ = apply_state_updates(prev, decomposed, "leaf", DECOMPOSED, SKIPPED)

    assert [(n.passes, n.attempts) for n in find(updated, "leaf").children] == [
        (False, 0),
        (False, 0),
    ]


def test_fields_the_agent_owns_are_kept_from_the_next_tree() -> None:
    edited = tree("root", tree("leaf", attempts=1, title="clearer", max_attempts=5, order=4))

    updated, _ = apply_state_updates(one_leaf(), edited, "leaf", DONE, SKIPPED)

    leaf = find(updated, "leaf")
    assert (leaf.title, leaf.order) == ("clearer", 4)


def test_max_attempts_of_an_existing_node_is_the_runners() -> None:
    raised = tree("root", tree("leaf", attempts=1, max_attempts=99))

    updated, _ = apply_state_updates(one_leaf(max_attempts=2), raised, "leaf", DONE, FAIL)

    assert (find(updated, "leaf").attempts, find(updated, "leaf").max_attempts) == (2, 2)


# ---------------------------------------------------------------- derived passes


def test_a_parent_passes_once_all_its_children_pass_all_the_way_up() -> None:
    prev = tree(
        "root",
        tree("a", tree("a.1", passes=True, order=0), tree("a.2", order=1), order=0),
        tree("b", passes=True, order=1),
    )

    updated, summary = apply_state_updates(prev, prev, "a.2", DONE, PASS)

    assert (updated.passes, find(updated, "a").passes) == (True, True)
    assert summary.passes_set == ("a.2",)
    assert summary.derived_passes_set == ("a", "root")


def test_a_parent_with_an_open_child_does_not_pass() -> None:
    prev = tree(
        "root",
        tree("a", tree("a.1", order=0), tree("a.2", order=1), order=0),
    )

    updated, summary = apply_state_updates(prev, prev, "a.1", DONE, PASS)

    assert find(updated, "a.1").passes
    assert not find(updated, "a").passes
    assert not updated.passes
    assert summary.derived_passes_set == ()


def test_derived_passes_lists_only_parents_that_turn_true() -> None:
    prev = tree(
        "root",
        tree("x", tree("x.1", passes=True), passes=True, order=0),
        tree("y", tree("y.1"), order=1),
    )

    _, summary = apply_state_updates(prev, prev, "y.1", DONE, PASS)

    assert summary.derived_passes_set == ("root", "y")


def test_a_passed_parent_that_gains_an_open_child_no_longer_passes() -> None:
    prev = tree("root", tree("a", tree("a.1", passes=True), passes=True), passes=True)
    grown = tree(
        "root",
        tree("a", tree("a.1", passes=True, order=0), tree("a.2", order=1), passes=True),
        passes=True,
    )

    updated, summary = apply_state_updates(prev, grown, "a.1", DONE, SKIPPED)

    assert (updated.passes, find(updated, "a").passes) == (False, False)
    assert summary.derived_passes_set == ()


def test_leaves_keep_their_passes_value() -> None:
    prev = tree("root", tree("open", order=0), tree("passed", passes=True, order=1))

    updated, _ = apply_state_updates(prev, prev, "open", RETRY, SKIPPED)

    assert [(n.id, n.passes) for n in updated.children] == [("open", False), ("passed", True)]


def test_summary_lists_are_sorted_by_id() -> None:
    prev = tree(
        "root",
        tree("z", tree("m", tree("leaf")), order=0),
    )

    _, summary = apply_state_updates(prev, prev, "leaf", DONE, PASS)

    assert summary.derived_passes_set == ("m", "root", "z")


# ---------------------------------------------------------------- result and inputs


def test_the_result_is_in_canonical_order() -> None:
    unsorted = tree(
        "root",
        tree("b", tree("b.2", order=2), tree("b.1", order=1), order=1),
        tree("a", order=0),
    )

    updated, _ = apply_state_updates(unsorted, unsorted, "a", RETRY, SKIPPED)

    assert ids(updated) == ["root", "a", "b", "b.1", "b.2"]


def test_the_inputs_are_left_as_they_were() -> None:
    prev = tree("root", tree("b", order=1), tree("a", order=0, attempts=1))
    after = tree("root", tree("b", order=1, passes=True), tree("a", order=0, title="new"))
    prev_text, after_text = dumps_tree(prev), dumps_tree(after)
    prev_order, after_order = ids(prev), ids(after)

    apply_state_updates(prev, after, "a", DONE, FAIL)

    assert (dumps_tree(prev), dumps_tree(after)) == (prev_text, after_text)
    assert (ids(prev), ids(after)) == (prev_order, after_order)


def test_a_selected_node_missing_from_the_next_tree_is_an_unknown_selected_node() -> None:
    with pytest.raises(UnknownSelectedNode) as raised:
        apply_state_updates(one_leaf(), one_leaf(), "ghost", DONE, PASS)

    assert str(raised.value) == "selected node 'ghost' is not in the tree"
