"""A tree file asked whether it is valid and which leaf is next, without building the tree.

`runner select` and `runner validate` print a line about a tree and keep nothing of it.
Building its immutable `Node`s costs about as much as decoding its JSON, and defining `Node`
(importing attrs) costs a whole process about as much again (`python -X importtime`), so they
ask here first: one decode, each node checked as it is decoded by the reader generated from
the schema (`plain_values_reader`: the checks of `parse_tree`'s one-pass path) and kept as the
tuple of its values, then one walk over those tuples for the invariants and the leftmost open
leaf. Nothing here imports attrs.

Sound, not complete: `read_plain_tree` gives None whenever it cannot say the tree is valid
(text `parse_tree`'s one-pass path gives up on, a broken invariant, text that is not UTF-8
JSON), and the caller asks `parse_tree`, which reads what this gives up on or words the error.
When it answers, `parse_tree` accepts the same bytes and `select_leaf` finds the same leaf.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from runner_core.tree import _node_validator as _tree_node
from runner_core.tree.bounds import FORBIDDEN_IN_ID, ID_MAX_LENGTH, MAX_DEPTH

# `\uD800`-`\uDFFF` escapes: the only way an unpaired surrogate gets into decoded UTF-8 text.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

# A node's values, in the schema's order (`_tree_node.NODE_FIELDS`), its children as a list
# of such tuples.
PlainNode = tuple[Any, ...]

# Where each field is in a `PlainNode`, for the views that read one (runner_core.views).
ID, ORDER, TITLE, NEXT, PASSES, ATTEMPTS, MAX_ATTEMPTS, CHILDREN = (
    _tree_node.NODE_FIELDS.index(name)
    for name in (
        "id",
        "order",
        "title",
        "next",
        "passes",
        "attempts",
        "max_attempts",
        "children",
    )
)


class Leaf(NamedTuple):
    """A leaf as `runner select` prints it: its id, its path (its ids from the root joined by
    `/`), its attempts and max_attempts."""

    id: str
    path: str
    attempts: int
    max_attempts: int

    @property
    def stuck(self) -> bool:
        """Whether it has used all its attempts (it has not passed: it is the open leaf)."""
        return self.attempts >= self.max_attempts


class PlainTree(NamedTuple):
    """A valid tree's answer: how many nodes it has, and the leftmost leaf that has not
    passed (None when every leaf passed)."""

    nodes: int
    next_leaf: Leaf | None


class _NotPlain(Exception):
    """Raised from inside the JSON decoder to give up."""


_plain_values_reader: Callable[..., Callable[[list[tuple[str, Any]]], PlainNode]] = (
    _tree_node.plain_values_reader
)
_read_node = _plain_values_reader(_NotPlain)


def read_plain_tree(data: bytes) -> PlainTree | None:
    """The answer for the tree file's bytes, or None when this path cannot say it is valid."""
    read = read_plain_root(data)
    return None if read is None else read[1]


def read_plain_root(data: bytes) -> tuple[PlainNode, PlainTree] | None:
    """The tree file's root as a `PlainNode` and its answer, or None when this path cannot say
    the tree is valid. Its nodes are in canonical order (`_walked` answers for no other), so a
    pre-order walk of it walks the tree as `canonical_preorder` does."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\\" in text and SURROGATE_ESCAPE.search(text) is not None:
        return None  # a string may hold a lone surrogate: parse_tree names it
    try:
        root = json.loads(text, object_pairs_hook=_read_node)
    except (_NotPlain, ValueError, RecursionError):
        return None
    if type(root) is not tuple:
        return None
    answer = _walked(root)
    return None if answer is None else (root, answer)


def _walked(root: PlainNode) -> PlainTree | None:
    """One pre-order walk: the invariants `invariant_findings` checks, and the first open
    leaf. Siblings found in `(order, id)` order are walked in stored order, which is then the
    canonical order `select_leaf` walks in."""
    seen: set[str] = set()
    found: list[Leaf] = []

    def holds(node: PlainNode, ancestors: tuple[str, ...]) -> bool:
        node_id: str = node[ID]
        attempts: int = node[ATTEMPTS]
        maximum: int = node[MAX_ATTEMPTS]
        if (
            len(ancestors) >= MAX_DEPTH
            or node_id in seen
            or len(node_id) > ID_MAX_LENGTH
            or maximum <= 0
            or attempts > maximum
        ):
            return False
        seen.add(node_id)
        children: list[PlainNode] = node[CHILDREN]
        if not children:
            if not found and not node[PASSES]:
                found.append(Leaf(node_id, "/".join((*ancestors, node_id)), attempts, maximum))
            return True
        if len(children) > 1:
            keys = [(child[ORDER], child[ID]) for child in children]
            if keys != sorted(keys):
                return False
        below = (*ancestors, node_id)
        return all([holds(child, below) for child in children])

    if not holds(root, ()) or FORBIDDEN_IN_ID.search("".join(seen)) is not None:
        return None
    return PlainTree(len(seen), found[0] if found else None)
