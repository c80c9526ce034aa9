"""Assertions for tests of tools that read or write task trees, in the runner's own words.

Decides nothing: each helper asks the runner_core function that owns the rule and raises
`AssertionError` with the message that function gives, so a failing test reads like the
runner's refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from runner_core import (
    AgentStatus,
    GuardOutcome,
    InvalidTransition,
    Node,
    TreeValidationError,
    apply_state_updates,
    parse_tree,
    tree_to_json,
)
from runner_core.testing.trees import preorder
from runner_core.tree.state_update import UnknownSelectedNode
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.status import status_findings


def assert_valid_tree(tree: Node | Mapping[str, Any] | str | bytes) -> Node:
    """The tree a `Node`, JSON data or tree.json text describes, read as the runner reads it
    (parse → schema → invariants, siblings as given); `AssertionError` with the runner's
    `TreeValidationError` line otherwise."""
    if isinstance(tree, Node):
        tree = tree_to_json(tree)
    text = tree if isinstance(tree, str | bytes) else json.dumps(tree, ensure_ascii=False)
    try:
        return parse_tree(text)
    except TreeValidationError as error:
        raise AssertionError(str(error)) from None


def _runner_owned_changes(expected: Node, actual: Node) -> list[str]:
    """Each node of `actual` whose passes/attempts differ from `expected`'s node of its id."""
    wanted = {node.id: node for node, _ in preorder(expected)}
    changes: list[str] = []
    for node, _ in preorder(actual):
        keep = wanted[node.id]
        for field, have, want in (
            ("passes", node.passes, keep.passes),
            ("attempts", node.attempts, keep.attempts),
        ):
            if have != want:
                changes.append(f"node '{node.id}' {field} is {have}, the runner's is {want}")
    return changes


def assert_runner_owned_unchanged(prev: Node, next_tree: Node) -> None:
    """`next_tree` leaves every runner-owned field where the runner keeps it: each node's
    passes/attempts are prev's (false/0 for a new node), with a parent's passes derived from
    its children, exactly as apply_state_updates resets them when no transition applies."""
    reset, _ = apply_state_updates(
        prev, next_tree, next_tree.id, AgentStatus.DONE, GuardOutcome.SKIPPED
    )
    changes = _runner_owned_changes(reset, next_tree)
    if changes:
        raise AssertionError("runner-owned fields changed: " + "; ".join(changes))


def assert_transition_allowed(
    prev: Node, next_tree: Node, selected_id: str, status: AgentStatus, guard: GuardOutcome
) -> None:
    """`next_tree` is what an iteration on `selected_id` ending in `(status, guard)` may
    leave after `prev`: a valid tree, a row of the transition table, no child added outside a
    decomposition of the selected node, no passed node changed, the status matching what
    happened to the selected node, and passes/attempts exactly as apply_state_updates sets
    them.

    A runner error is not a transition: it leaves `prev` itself, attempts included.
    """
    assert_valid_tree(next_tree)
    try:
        expected, _ = apply_state_updates(prev, next_tree, selected_id, status, guard)
    except (InvalidTransition, UnknownSelectedNode) as error:
        raise AssertionError(str(error)) from None
    decomposing = selected_id if status is AgentStatus.DECOMPOSED else None
    problems = [
        *messages(child_findings(prev, next_tree, decomposing)),
        *messages(passed_node_findings(prev, next_tree)),
        *messages(status_findings(prev, next_tree, selected_id, status)),
        *_runner_owned_changes(expected, next_tree),
    ]
    if problems:
        raise AssertionError("; ".join(problems))
