"""Brute-force references the properties compare runner_core against: short and obviously
correct, at the price of recursion and repeated work."""

from __future__ import annotations

from runner_core import Node, SelectionStatus


def reference_selection(tree: Node) -> tuple[SelectionStatus, Node | None, str | None]:
    """SPEC §3 read literally: recursive pre-order over children sorted by (order, id); the
    first leaf with passes == false is selected; it is stuck iff attempts >= max_attempts."""

    def first_open_leaf(node: Node, path: list[str]) -> tuple[Node, list[str]] | None:
        if not node.children:
            return (node, path) if not node.passes else None
        for child in sorted(node.children, key=lambda c: (c.order, c.id)):
            found = first_open_leaf(child, [*path, child.id])
            if found is not None:
                return found
        return None

    found = first_open_leaf(tree, [tree.id])
    if found is None:
        return SelectionStatus.COMPLETE, None, None
    leaf, path = found
    status = SelectionStatus.STUCK if leaf.attempts >= leaf.max_attempts else SelectionStatus.OPEN
    return status, leaf, "/".join(path)
