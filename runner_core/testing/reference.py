"""A brute-force selection oracle: the selection rule read literally, for people who reimplement it.

Decides nothing the runner uses; it is short and obviously correct at the price of recursion
and repeated sorting, so `select_leaf` (and any reimplementation) can be compared with it.
"""

from __future__ import annotations

from runner_core import CompleteTree, Node, OpenLeaf, StuckLeaf
from runner_core.tree.selection import Selection


def reference_select_leaf(tree: Node) -> Selection:
    """Recursive pre-order over children sorted by `(order, id)`; the first leaf with
    `passes == false` is selected; it is stuck iff `attempts >= max_attempts`; no such leaf
    means the tree is complete. Equal to `select_leaf(tree)`, the very same leaf object."""

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
        return CompleteTree()
    leaf, path = found
    stuck = leaf.attempts >= leaf.max_attempts
    return (StuckLeaf if stuck else OpenLeaf)(leaf, "/".join(path))
