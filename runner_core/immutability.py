"""Layer 3 of validation: passed nodes are immutable (SPEC §4.3).

Decides, for every node that passed in the previous tree, whether the next tree still holds it
in the same place with the same value. Open nodes are the agent's to edit, move or remove.
"""

from __future__ import annotations

from runner_core.model import Node


def check_passed_node_immutability(prev: Node, next_tree: Node) -> tuple[str, ...]:
    """Every change to a passed node, sorted by node id; empty when none was touched."""
    after, new_parents = _index(next_tree)
    # One pre-order walk of prev: each passed id's first node and its parent, and the
    # topmost passed nodes, whose subtrees hold every node a verdict depends on.
    passed: dict[str, Node] = {}
    old_parents: dict[str, str | None] = {}
    tops: list[Node] = []
    stack: list[tuple[Node, str | None, bool]] = [(prev, None, False)]
    while stack:
        node, parent, under_passed = stack.pop()
        if node.passes:
            if not under_passed:
                tops.append(node)
            if node.id not in passed:
                passed[node.id] = node
                old_parents[node.id] = parent
        if node.children:
            below = under_passed or node.passes
            stack.extend([(child, node.id, below) for child in reversed(node.children)])
    unchanged = _unchanged_subtrees(tops, after)
    errors: list[tuple[str, str]] = []
    for node_id, node in passed.items():
        if node_id not in after:
            errors.append((node_id, f"passed node '{node_id}' missing in next tree"))
            continue
        old_parent, new_parent = old_parents[node_id], new_parents[node_id]
        if old_parent != new_parent:
            errors.append(
                (
                    node_id,
                    f"passed node '{node_id}' moved from parent "
                    f"'{_name(old_parent)}' to '{_name(new_parent)}'",
                )
            )
        if id(node) not in unchanged:
            errors.append((node_id, f"passed node '{node_id}' changed in next tree"))
    return tuple(message for _, message in sorted(errors))


def _name(parent: str | None) -> str:
    return "(none)" if parent is None else parent


def _index(root: Node) -> tuple[dict[str, Node], dict[str, str | None]]:
    """`index_by_id` as two maps, node and parent id, so no entry allocates an object."""
    nodes: dict[str, Node] = {}
    parents: dict[str, str | None] = {}
    stack: list[tuple[Node, str | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        if node.id not in nodes:
            nodes[node.id] = node
            parents[node.id] = parent
        if node.children:
            stack.extend([(child, node.id) for child in reversed(node.children)])
    return nodes, parents


def _unchanged_subtrees(tops: list[Node], after: dict[str, Node]) -> set[int]:
    """`id()` of every node under `tops` equal by value to the next tree's node of its id.

    Bottom-up, so each node is compared once instead of whole subtrees again for every
    passed ancestor.
    """
    unchanged: set[int] = set()
    for top in tops:
        # A right-to-left pre-order, reversed: every child before its parent.
        order: list[Node] = []
        stack = [top]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(node.children)
        for node in reversed(order):
            other = after.get(node.id)
            if other is None:
                continue
            if (node is other or node.has_own_fields_of(other)) and all(
                id(mine) in unchanged and mine.id == theirs.id
                for mine, theirs in zip(node.children, other.children, strict=True)
            ):
                unchanged.add(id(node))
    return unchanged
