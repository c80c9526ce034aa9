"""What runs next: the leftmost open leaf, whether it is stuck, and how many leaves passed.

Decides selection by a depth-first walk with siblings in `(order, id)` order. A leaf is
stuck when it has not passed and has used all its attempts. Never changes the tree.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Literal

import attrs

from runner_core.tree.model import Ancestors, Node, iter_preorder, path_of, sort_key
from runner_core.tree.plain import Leaf, PlainTree


class SelectionStatus(enum.StrEnum):
    """What selection found; a `str`, so it compares equal to "open", "complete", "stuck"."""

    OPEN = "open"
    COMPLETE = "complete"
    STUCK = "stuck"


@attrs.frozen(slots=True)
class OpenLeaf:
    """The next iteration runs on `node`, a leaf that has not passed and has attempts left;
    `path` is its ids from the root joined by `/`."""

    node: Node
    path: str
    status: ClassVar[Literal[SelectionStatus.OPEN]] = SelectionStatus.OPEN


@attrs.frozen(slots=True)
class StuckLeaf:
    """The first leaf that has not passed, `node` at `path`, has used all its attempts: nothing
    runs until a person retries, replaces, decomposes or skips it."""

    node: Node
    path: str
    status: ClassVar[Literal[SelectionStatus.STUCK]] = SelectionStatus.STUCK


@attrs.frozen(slots=True)
class CompleteTree:
    """Every leaf has passed: nothing is selected, so `node` and `path` are None."""

    status: ClassVar[Literal[SelectionStatus.COMPLETE]] = SelectionStatus.COMPLETE
    node: ClassVar[None] = None
    path: ClassVar[None] = None


# What `select_leaf` found, told apart by `status` (or `match`): only a leaf has a node.
Selection = OpenLeaf | StuckLeaf | CompleteTree


def is_stuck(node: Node) -> bool:
    """Whether `node` has not passed and has used all its attempts: the runner will not run
    it again until a person retries, replaces, decomposes or skips it."""
    return attempts_used(node.passes, node.attempts, node.max_attempts)


def attempts_used(passes: bool, attempts: int, max_attempts: int) -> bool:
    """`is_stuck` of a node with these fields."""
    return not passes and attempts >= max_attempts


def leftmost_open_leaf(tree: Node) -> tuple[Node, str] | None:
    """The first leaf with `passes == false` in canonical pre-order, with its path."""

    def search(node: Node, ancestors: Ancestors) -> tuple[Node, str] | None:
        if not node.children:
            return None if node.passes else (node, path_of(ancestors, node.id))
        below = (*ancestors, node.id)
        for child in sorted(node.children, key=sort_key):
            found = search(child, below)
            if found is not None:
                return found
        return None

    return search(tree, ())


def select_leaf(tree: Node) -> Selection:
    """The leaf the next iteration works on: the first leaf that has not passed, walking the
    tree depth-first with siblings in `(order, id)` order. A `CompleteTree` when every leaf
    passed, a `StuckLeaf` when that leaf has used all its attempts (`is_stuck`), else an
    `OpenLeaf`; each says which by its `status`."""
    found = leftmost_open_leaf(tree)
    if found is None:
        return CompleteTree()
    node, path = found
    return StuckLeaf(node, path) if is_stuck(node) else OpenLeaf(node, path)


def node_path(tree: Node, node_id: str) -> str | None:
    """The path of the first node with this id, or None when the tree has none."""
    for node, ancestors in iter_preorder(tree):
        if node.id == node_id:
            return path_of(ancestors, node.id)
    return None


def plain_answer(tree: Node) -> PlainTree:
    """What `runner_core.tree.plain.read_plain_tree` answers for a valid tree, from the tree."""
    selection = select_leaf(tree)
    leaf = None
    if not isinstance(selection, CompleteTree):
        node = selection.node
        leaf = Leaf(node.id, selection.path, node.attempts, node.max_attempts)
    return PlainTree(sum(1 for _ in iter_preorder(tree)), leaf)


def leaf_counts(tree: Node) -> tuple[int, int]:
    """`(passed, total)` over the tree's leaves."""
    leaves = [node for node, _ in iter_preorder(tree) if node.is_leaf]
    return sum(1 for leaf in leaves if leaf.passes), len(leaves)
