"""The task tree's data: an immutable `Node` and the enums a step speaks in.

Decides nothing; it only says what a tree, an agent status and a guard outcome are.
Equality, hashing and repr are iterative so a 10,000-deep chain never reaches Python's
recursion limit.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import attrs


class NodeNext(enum.Enum):
    EXECUTE = "execute"
    DECOMPOSE = "decompose"


class AgentStatus(enum.Enum):
    DONE = "done"
    RETRY = "retry"
    DECOMPOSED = "decomposed"


class GuardOutcome(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"


class AgentRole(enum.Enum):
    """Which agent an iteration runs: a node's `next` names it."""

    DECOMPOSER = "decomposer"
    EXECUTOR = "executor"


# The schema's field order; canonical JSON writes keys in exactly this order.
NODE_FIELDS: tuple[str, ...] = (
    "id",
    "order",
    "title",
    "goal",
    "acceptance",
    "next",
    "passes",
    "attempts",
    "max_attempts",
    "children",
)


@attrs.frozen(slots=True, eq=False, repr=False)
class Node:
    id: str
    order: int
    title: str
    goal: str
    acceptance: tuple[str, ...]
    next: NodeNext
    passes: bool
    attempts: int
    max_attempts: int
    children: tuple[Node, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children

    @property
    def sort_key(self) -> tuple[int, str]:
        return (self.order, self.id)

    def own_fields(self) -> tuple[Any, ...]:
        """Every field except `children`: what must match for two nodes to be equal here."""
        return (
            self.id,
            self.order,
            self.title,
            self.goal,
            self.acceptance,
            self.next,
            self.passes,
            self.attempts,
            self.max_attempts,
            len(self.children),
        )

    def has_own_fields_of(self, other: Node) -> bool:
        """`self.own_fields() == other.own_fields()`, without building either tuple."""
        return (
            self.id == other.id
            and self.order == other.order
            and self.title == other.title
            and self.goal == other.goal
            and self.acceptance == other.acceptance
            and self.next == other.next
            and self.passes == other.passes
            and self.attempts == other.attempts
            and self.max_attempts == other.max_attempts
            and len(self.children) == len(other.children)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        pending = [(self, other)]
        while pending:
            left, right = pending.pop()
            if left is right:
                continue
            if not left.has_own_fields_of(right):
                return False
            pending.extend(zip(left.children, right.children, strict=True))
        return True

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        # Shallow on purpose: equal nodes have equal own fields, and hashing stays O(1).
        return hash(self.own_fields())

    def __repr__(self) -> str:
        return (
            f"Node(id={self.id!r}, order={self.order}, next={self.next.value}, "
            f"passes={self.passes}, attempts={self.attempts}/{self.max_attempts}, "
            f"children={len(self.children)})"
        )


# The ancestors of a node as a linked list, innermost first: `(parent id, its Trail)`.
# Sharing tails keeps a walk O(nodes) even on a 10,000-deep chain.
Trail = tuple[str, "Trail"] | None


def iter_preorder(root: Node) -> Iterator[tuple[Node, Trail]]:
    """Yield `(node, ancestors)` depth-first, children in the order they are stored."""
    stack: list[tuple[Node, Trail]] = [(root, None)]
    while stack:
        node, trail = stack.pop()
        yield node, trail
        if node.children:
            below: Trail = (node.id, trail)
            stack.extend((child, below) for child in reversed(node.children))


def trail_path(trail: Trail, node_id: str) -> str:
    """The node's path: its ancestors' ids and its own, joined by `/`."""
    ids = [node_id]
    while trail is not None:
        ids.append(trail[0])
        trail = trail[1]
    return "/".join(reversed(ids))


def parent_id(trail: Trail) -> str | None:
    return None if trail is None else trail[0]


def rebuild_postorder(root: Node, rebuild: Callable[[Node, tuple[Node, ...]], Node]) -> Node:
    """Return a new tree where every node is `rebuild(node, its already-rebuilt children)`.

    Children are rebuilt before their parent, left to right, without recursion. Every
    structural transformation of the core goes through here.
    """
    # A right-to-left pre-order, reversed, is the left-to-right post-order.
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    done: list[Node] = []
    for node in reversed(order):
        count = len(node.children)
        if count:
            rebuilt = tuple(done[-count:])
            del done[-count:]
        else:
            rebuilt = ()
        done.append(rebuild(node, rebuilt))
    return done[0]


def with_children(node: Node, children: tuple[Node, ...]) -> Node:
    if same_objects(children, node.children):
        return node
    return Node(
        node.id,
        node.order,
        node.title,
        node.goal,
        node.acceptance,
        node.next,
        node.passes,
        node.attempts,
        node.max_attempts,
        children,
    )


def sort_children(root: Node) -> Node:
    """Canonical order: siblings sorted by `(order, id)` at every level."""
    if _sorted_everywhere(root):
        return root  # the common case: a tree read from canonical text

    def sorted_node(node: Node, children: tuple[Node, ...]) -> Node:
        ordered = tuple(sorted(children, key=_sort_key))
        if same_objects(ordered, node.children):
            return node
        return with_children(node, ordered)

    return rebuild_postorder(root, sorted_node)


def _sorted_everywhere(root: Node) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        children = node.children
        if len(children) > 1 and in_canonical_order(children) is not children:
            return False
        stack.extend(children)
    return True


def in_canonical_order(siblings: tuple[Node, ...]) -> tuple[Node, ...]:
    """`siblings` sorted by `(order, id)`: the very tuple when it already is."""
    for left, right in pairwise(siblings):
        if left.order > right.order or (left.order == right.order and left.id > right.id):
            return tuple(sorted(siblings, key=_sort_key))
    return siblings


def same_objects(left: tuple[Node, ...], right: tuple[Node, ...]) -> bool:
    """Whether two child tuples hold the very same nodes: the O(1)-per-child equality."""
    return len(left) == len(right) and all(map(operator.is_, left, right))


def _sort_key(node: Node) -> tuple[int, str]:
    return (node.order, node.id)


def index_by_id(root: Node) -> dict[str, tuple[Node, str | None]]:
    """Map every id to `(node, parent id)`; the first occurrence in pre-order wins."""
    index: dict[str, tuple[Node, str | None]] = {}
    stack: list[tuple[Node, str | None]] = [(root, None)]
    while stack:
        entry = stack.pop()
        node = entry[0]
        if node.id not in index:
            index[node.id] = entry
        if node.children:
            parent = node.id
            stack.extend([(child, parent) for child in reversed(node.children)])
    return index


def nodes_by_id(root: Node) -> dict[str, Node]:
    """Map every id to its node; the first occurrence in pre-order wins."""
    found: dict[str, Node] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        found.setdefault(node.id, node)
        stack.extend(reversed(node.children))
    return found


def count_nodes(root: Node) -> int:
    return sum(1 for _ in iter_preorder(root))
