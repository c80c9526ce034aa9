"""Operator commands on a node (`runner node retry|decompose|replace|skip|add|edit`), as pure
functions.

Decides what each command does to the tree, which nodes it refuses (passed ones, the root for
skip, subtrees holding passed nodes), whether the result passes every validation layer, and
the commit message and trailers that record who did what. Never reads files, git or the clock;
the shell gives it the tree, the operator's JSON and git's identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runner_core.run.config import MAX_VALUES
from runner_core.run.operator_actions import OperatorAction as OperatorAction
from runner_core.run.operator_actions import action_from_message as action_from_message
from runner_core.run.operator_actions import operation_message as operation_message
from runner_core.run.operator_actions import run_actions as run_actions
from runner_core.run.trailers import NodeOperation as NodeOperation  # re-exported; home: trailers
from runner_core.tree.decompose import (
    ChildSpec,
    child_specs_from_output,
    decompose_node,
    decomposition_problems,
)
from runner_core.tree.model import (
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    index_by_id,
    iter_preorder,
    rebuild_postorder,
    with_children,
)
from runner_core.tree.serialization import (
    TREE_MAX_BYTES,
    TreeValidationError,
    canonical_fits,
    tree_to_json,
)
from runner_core.tree.state_update import apply_state_updates
from runner_core.validation.child_additions import child_findings
from runner_core.validation.finding import messages
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.loading import tree_from_valid_json
from runner_core.validation.schema import decomposer_output_findings


class OperationError(ValueError):
    """An operator command the tree refuses; `str()` is the one line to print."""


@attrs.frozen(slots=True)
class NewPlan:
    """What `runner node replace` puts in place of an open node."""

    title: str
    goal: str
    acceptance: tuple[str, ...]
    next: NodeNext
    children: tuple[ChildSpec, ...] = ()


def _open_node(tree: Node, node_id: str, op: NodeOperation) -> tuple[Node, str | None]:
    """The node and its parent id; refuses unknown and passed nodes."""
    nodes, parents = index_by_id(tree)
    found = nodes.get(node_id)
    if found is None:
        raise OperationError(f"node {op.value}: no node '{node_id}' in the tree")
    if found.passes:
        raise OperationError(
            f"node {op.value}: node '{node_id}' has passed; passed nodes never change"
        )
    return found, parents[node_id]


def _passed_below(node: Node) -> tuple[str, ...]:
    return tuple(sorted(below.id for below, _ in iter_preorder(node) if below.passes))


def _refuse_passed_below(node: Node, op: NodeOperation) -> None:
    passed = _passed_below(node)
    if passed:
        shown = ", ".join(passed[:5]) + (f" (+{len(passed) - 5} more)" if len(passed) > 5 else "")
        raise OperationError(
            f"node {op.value}: the subtree of '{node.id}' holds passed node(s) {shown}; "
            "passed nodes never change"
        )


def _replace(tree: Node, node_id: str, change: Node) -> Node:
    """The tree with the node `node_id` (first in pre-order) replaced by `change`."""

    def swap(node: Node, children: tuple[Node, ...]) -> Node:
        return change if node.id == node_id else with_children(node, children)

    return rebuild_postorder(tree, swap)


def retry_node(tree: Node, node_id: str, attempts: int) -> Node:
    """Give an open node `attempts` more attempts: `max_attempts = attempts used + N`."""
    node, _ = _open_node(tree, node_id, NodeOperation.RETRY)
    # As many as a node may be given at all: config.toml's bound on max_attempts_default.
    most = MAX_VALUES["max_attempts_default"]
    if attempts < 1:
        raise OperationError(f"node retry: --attempts must be at least 1, not {attempts}")
    if attempts > most:
        raise OperationError(f"node retry: --attempts must be at most {most}, not {attempts}")
    return _replace(tree, node_id, attrs.evolve(node, max_attempts=node.attempts + attempts))


def decompose_later(tree: Node, node_id: str) -> Node:
    """Mark an open leaf for the decomposer and give it the one attempt that needs."""
    node, _ = _open_node(tree, node_id, NodeOperation.DECOMPOSE)
    if not node.is_leaf:
        raise OperationError(
            f"node decompose: node '{node_id}' already has children; only a leaf is decomposed "
            "(pass --from FILE to add children to it now)"
        )
    changed = attrs.evolve(node, next=NodeNext.DECOMPOSE, max_attempts=node.attempts + 1)
    return _replace(tree, node_id, changed)


def child_specs_from_file(document: Any, op: NodeOperation) -> tuple[ChildSpec, ...]:
    """The children of a decomposer-output document the operator wrote; refuses bad ones."""
    errors = messages(decomposer_output_findings(document))
    if not errors:
        errors = decomposition_problems(child_specs_from_output(document))
    if errors:
        raise OperationError(f"node {op.value}: --from: {'; '.join(errors)}")
    return child_specs_from_output(document)


def decompose_now(
    tree: Node, node_id: str, specs: tuple[ChildSpec, ...], max_attempts_default: int
) -> Node:
    """Add the operator's children under an open node, named by the decomposer's id rules."""
    _open_node(tree, node_id, NodeOperation.DECOMPOSE)
    return decompose_node(tree, node_id, specs, max_attempts_default)


PLAN_FIELDS = ("title", "goal", "acceptance", "next", "children")


def plan_from_json(document: Any) -> NewPlan:
    """A replacement plan: `{title, goal, acceptance, next[, children]}`; refuses anything else."""
    if not isinstance(document, Mapping):
        raise OperationError("node replace: --from must hold a JSON object")
    unknown = sorted(set(document) - set(PLAN_FIELDS))
    if unknown:
        raise OperationError(
            f"node replace: --from has unknown field(s) {', '.join(unknown)} "
            f"(allowed: {', '.join(PLAN_FIELDS)})"
        )
    required = PLAN_FIELDS[:4]
    missing = [field for field in required if field not in document]
    if missing:
        raise OperationError(
            f"node replace: --from lacks the required field(s) {', '.join(missing)} "
            f"(a plan is {{{', '.join(required)}[, children]}})"
        )
    # The node's own fields have exactly a decomposer child's shape and rules; their errors
    # are named as the user wrote them, not by their place in that decomposer document.
    own = {field: document[field] for field in required}
    shape = messages(decomposer_output_findings({"summary": "", "children": [own]}))
    if shape:
        own_terms = (error.replace("$.children[0].", "", 1) for error in shape)
        raise OperationError(f"node replace: --from: {'; '.join(own_terms)}")
    (spec,) = child_specs_from_file({"summary": "", "children": [own]}, NodeOperation.REPLACE)
    children: tuple[ChildSpec, ...] = ()
    if "children" in document:
        children = child_specs_from_file(
            {"summary": "", "children": document["children"]}, NodeOperation.REPLACE
        )
    return NewPlan(spec.title, spec.goal, spec.acceptance, spec.next, children)


def replace_node(tree: Node, node_id: str, plan: NewPlan, max_attempts_default: int) -> Node:
    """A new plan for an open node: its text, attempts back to 0, children only as given."""
    node, _ = _open_node(tree, node_id, NodeOperation.REPLACE)
    _refuse_passed_below(node, NodeOperation.REPLACE)
    fresh = attrs.evolve(
        node,
        title=plan.title,
        goal=plan.goal,
        acceptance=plan.acceptance,
        next=plan.next,
        attempts=0,
        children=(),
    )
    replaced = _replace(tree, node_id, fresh)
    if not plan.children:
        return replaced
    return decompose_node(replaced, node_id, plan.children, max_attempts_default)


def skip_node(tree: Node, node_id: str) -> Node:
    """Abandon an open node: remove it and its subtree, then derive its ancestors' passes."""
    node, parent = _open_node(tree, node_id, NodeOperation.SKIP)
    if parent is None:
        raise OperationError("node skip: the root cannot be skipped (replace it instead)")
    _refuse_passed_below(node, NodeOperation.SKIP)

    def drop(kept: Node, children: tuple[Node, ...]) -> Node:
        if kept.id == parent:
            children = tuple(child for child in children if child.id != node_id)
        return with_children(kept, children)

    pruned = rebuild_postorder(tree, drop)
    # A parent passes iff all its children pass: a skip may complete a parent. The
    # state update's derivation is that rule's one home; `decomposed` sets nothing else.
    derived, _ = apply_state_updates(
        pruned, pruned, parent, AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED
    )
    return derived


def node_text(
    op: NodeOperation, title: str, goal: str, acceptance: tuple[str, ...], next_: str
) -> ChildSpec:
    """A node's text given on the command line, held to a decomposer child's rules."""
    own = {"title": title, "goal": goal, "acceptance": list(acceptance), "next": next_}
    (spec,) = child_specs_from_file({"summary": "", "children": [own]}, op)
    return spec


def edit_node(
    tree: Node,
    node_id: str,
    title: str | None = None,
    goal: str | None = None,
    acceptance: tuple[str, ...] | None = None,
) -> Node:
    """An open node's title, goal or acceptance rewritten; its attempts and children kept."""
    node, _ = _open_node(tree, node_id, NodeOperation.EDIT)
    if title is None and goal is None and acceptance is None:
        raise OperationError("node edit: give at least one of --title, --goal, --acceptance")
    spec = node_text(
        NodeOperation.EDIT,
        node.title if title is None else title,
        node.goal if goal is None else goal,
        node.acceptance if acceptance is None else acceptance,
        node.next.value,
    )
    edited = attrs.evolve(node, title=spec.title, goal=spec.goal, acceptance=spec.acceptance)
    return _replace(tree, node_id, edited)


def add_node(
    tree: Node, parent_id: str, spec: ChildSpec, max_attempts_default: int
) -> tuple[Node, str]:
    """A new open child last under an open parent, named as the decomposer names children;
    the tree and the new id. No other node changes, attempts included."""
    parent, _ = _open_node(tree, parent_id, NodeOperation.ADD)
    grown = decompose_node(tree, parent_id, (spec,), max_attempts_default)
    before = {child.id for child in parent.children}
    children = index_by_id(grown)[0][parent_id].children
    (added,) = (child for child in children if child.id not in before)
    last = max((child.order for child in parent.children), default=-1)
    return _replace(grown, added.id, attrs.evolve(added, order=last + 1)), added.id


def operation_problems(
    prev: Node, next_tree: Node, node_id: str, op: NodeOperation
) -> tuple[str, ...]:
    """Every validation layer on the operator's tree: schema, invariants, immutability, and
    new children only under the node the command names."""
    if not canonical_fits(next_tree):
        return (f"its canonical form would exceed {TREE_MAX_BYTES} bytes",)
    try:
        tree_from_valid_json(tree_to_json(next_tree))
    except TreeValidationError as error:
        return (str(error),)
    adds_children = op in (NodeOperation.DECOMPOSE, NodeOperation.REPLACE, NodeOperation.ADD)
    return messages(child_findings(prev, next_tree, node_id if adds_children else None)) + messages(
        passed_node_findings(prev, next_tree)
    )


def checked(prev: Node, next_tree: Node, node_id: str, op: NodeOperation) -> Node:
    """`next_tree`, or OperationError naming every layer it fails."""
    problems = operation_problems(prev, next_tree, node_id, op)
    if problems:
        raise OperationError(f"node {op.value}: the tree would be invalid: {'; '.join(problems)}")
    return next_tree


def operation_line(run_id: str, op: NodeOperation, node_id: str, before: Node, after: Node) -> str:
    """The one `node:` line a command prints: what the node looks like now."""
    head = f"node: op={op.value} id={node_id} run={run_id}"
    changed = index_by_id(after)[0].get(node_id)
    if changed is None:
        removed = sum(1 for _ in iter_preorder(index_by_id(before)[0][node_id]))
        return f"{head} removed={removed}"
    children = ",".join(child.id for child in changed.children) or "none"
    return (
        f"{head} next={changed.next.value} attempts={changed.attempts}/{changed.max_attempts} "
        f"children={children}"
    )
