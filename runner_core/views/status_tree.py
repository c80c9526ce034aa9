"""The tree as `runner status` shows it: a row per node in canonical pre-order with its display
state, the stuck leaves, the leaf counts and the selected leaf, read from a `Node` or from the
tuples `runner_core.tree.plain` decodes (a 10,000-node tree's `Node`s cost as much to build as
its JSON costs to decode, and `runner status` keeps none of them).

Both readings apply the same rules (`leaf_display_state`, `parent_display_state`, `is_stuck`'s
`attempts_used`) and give equal values for the same valid tree. Never reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

import attrs

from runner_core.history.records import (
    RUNNING,
    SKIPPED,
    ExecutionHistory,
    NodeDisplayState,
    leaf_display_state,
    parent_display_state,
)
from runner_core.tree.model import Node, NodeNext, canonical_preorder
from runner_core.tree.plain import (
    ATTEMPTS,
    CHILDREN,
    ID,
    MAX_ATTEMPTS,
    NEXT,
    PASSES,
    TITLE,
    PlainNode,
)
from runner_core.tree.selection import (
    CompleteTree,
    SelectionStatus,
    attempts_used,
    is_stuck,
    select_leaf,
)
from runner_core.views.running import running_display_states


class TreeRow(NamedTuple):
    """One node of the tree as `runner status` draws it, in canonical pre-order (a tuple: a
    view holds one per node, and a tuple is built in about half the time of a frozen class)."""

    id: str
    path: str
    depth: int
    title: str
    next: NodeNext
    is_leaf: bool
    passes: bool
    attempts: int
    max_attempts: int
    executions: int
    state: NodeDisplayState


@attrs.frozen(slots=True)
class LeafRef:
    id: str
    path: str
    attempts: int
    max_attempts: int


class TreeReading(NamedTuple):
    """What the status view takes from the tree: its rows, stuck leaves, `(passed, total)`
    leaves, the display state of every node (those it lost after its own, sorted by id) and
    the selection."""

    rows: tuple[TreeRow, ...]
    stuck: tuple[LeafRef, ...]
    leaves: tuple[int, int]
    states: Mapping[str, NodeDisplayState]
    selection: SelectionStatus
    selected: LeafRef | None


def node_tree_reading(
    tree: Node, history: ExecutionHistory, running_ids: tuple[str, ...]
) -> TreeReading:
    """The reading of a `Node` tree, `running_ids` the nodes of the iterations in flight."""
    states = running_display_states(tree, history, running_ids)
    rows: list[TreeRow] = []
    stuck: list[LeafRef] = []
    passed = leaves = 0
    for node, path, depth in canonical_preorder(tree):
        if node.is_leaf:
            leaves += 1
            passed += node.passes
        rows.append(
            TreeRow(
                id=node.id,
                path=path,
                depth=depth,
                title=node.title,
                next=node.next,
                is_leaf=node.is_leaf,
                passes=node.passes,
                attempts=node.attempts,
                max_attempts=node.max_attempts,
                executions=history.execution_count(node.id),
                state=states[node.id],
            )
        )
        if node.is_leaf and is_stuck(node):
            stuck.append(LeafRef(node.id, path, node.attempts, node.max_attempts))
    selection = select_leaf(tree)
    selected = None
    if not isinstance(selection, CompleteTree):
        leaf = selection.node
        selected = LeafRef(leaf.id, selection.path, leaf.attempts, leaf.max_attempts)
    return TreeReading(
        tuple(rows), tuple(stuck), (passed, leaves), states, selection.status, selected
    )


_NEXT: Mapping[str, NodeNext] = MappingProxyType({member.value: member for member in NodeNext})


def plain_tree_reading(
    root: PlainNode, history: ExecutionHistory, running_ids: tuple[str, ...]
) -> TreeReading:
    """The reading of a tree `read_plain_root` gave: its nodes are unique and stored in
    canonical order, so its pre-order is the canonical one and the first open leaf met is
    the one `select_leaf` selects. One walk: a row is written once its children's states
    are known, in the place its node holds in pre-order."""
    running = frozenset(running_ids)
    executed = {node_id: history.execution_count(node_id) for node_id in history.node_ids()}
    rows: list[TreeRow | None] = []
    stuck: list[LeafRef] = []
    open_leaves: list[tuple[str, str, int, int]] = []
    passed = 0

    def visit(node: PlainNode, path: str, depth: int) -> NodeDisplayState:
        nonlocal passed
        place = len(rows)
        rows.append(None)
        node_id, children, passes = node[ID], node[CHILDREN], node[PASSES]
        attempts, maximum = node[ATTEMPTS], node[MAX_ATTEMPTS]
        if children:
            below = [visit(child, f"{path}/{child[ID]}", depth + 1) for child in children]
            state = parent_display_state(node_id, passes, below, running)
        else:
            state = leaf_display_state(node_id, passes, attempts, maximum, history, running)
            passed += passes
            if not passes:
                open_leaves.append((node_id, path, attempts, maximum))
                if attempts_used(passes, attempts, maximum):
                    stuck.append(LeafRef(node_id, path, attempts, maximum))
        rows[place] = TreeRow(
            node_id,
            path,
            depth,
            node[TITLE],
            _NEXT[node[NEXT]],
            not children,
            passes,
            attempts,
            maximum,
            executed.get(node_id, 0),
            state,
        )
        return state

    visit(root, root[ID], 0)
    in_tree = {row.id: row.state for row in rows if row is not None}
    for node_id in sorted((set(history.node_ids()) | running) - set(in_tree)):
        in_tree[node_id] = RUNNING if node_id in running else SKIPPED
    leaves = passed + len(open_leaves)
    selected = LeafRef(*open_leaves[0]) if open_leaves else None
    if selected is None:
        selection = SelectionStatus.COMPLETE
    elif attempts_used(False, selected.attempts, selected.max_attempts):
        selection = SelectionStatus.STUCK
    else:
        selection = SelectionStatus.OPEN
    shown = tuple(row for row in rows if row is not None)
    return TreeReading(shown, tuple(stuck), (passed, leaves), in_tree, selection, selected)
