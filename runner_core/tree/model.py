"""The task tree's data: an immutable `Node`, the canonical sibling key and the tree's walks.

Decides nothing about validity: it says what a node is, that siblings sort by `(order, id)`
(`sort_key`, the one home of that key) and how to walk a tree. A tree is at most MAX_DEPTH
levels deep (`invariants.py` refuses deeper ones), so every walk here is plain recursion.

Adding a node field touches schemas/task_tree/v1.schema.json (then run
`python scripts/gen_validators.py`, which regenerates the node reader and canonical writer in
`_tree_node.py`) and at most three other places: the `Node` class below, in the schema's
order; `decompose.decompose_node` only when the field has no default; and the generator only
when the field uses a JSON Schema keyword or type no field used before. Everything else
(NODE_FIELDS, `tree_from_json`, `tree_to_json`, equality) follows from `attrs.fields(Node)`.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any, Literal

import attrs

from runner_core.tree.bounds import ID_MAX_LENGTH as ID_MAX_LENGTH
from runner_core.tree.bounds import MAX_DEPTH as MAX_DEPTH


class NodeNext(enum.StrEnum):
    """What a node's next iteration does: execute it, or decompose it into children."""

    EXECUTE = "execute"
    DECOMPOSE = "decompose"


class AgentStatus(enum.StrEnum):
    """What an agent says it did: finished the node's work (`done`), wants another attempt
    (`retry`), or gave the node children (`decomposed`)."""

    DONE = "done"
    RETRY = "retry"
    DECOMPOSED = "decomposed"


class GuardOutcome(enum.StrEnum):
    """How the user's guard command ended: it runs only after `done`, else it is `skipped`."""

    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"


class AgentRole(enum.StrEnum):
    """Which agent an iteration runs: a node's `next` names it."""

    DECOMPOSER = "decomposer"
    EXECUTOR = "executor"


# Each enum's values as a type, for the signatures that take an enum or its string: a string
# that is no value (a typo) fails mypy, not only the enum's lookup at run time. A test holds
# each equal to its enum's values.
NodeNextValue = Literal["execute", "decompose"]
AgentStatusValue = Literal["done", "retry", "decomposed"]
GuardOutcomeValue = Literal["pass", "fail", "skipped"]
AgentRoleValue = Literal["decomposer", "executor"]
# The layers that judge a tree alone, in order: the first that refuses its text names the
# `TreeValidationError` (the other validation layers compare two trees).
TreeLayer = Literal["json", "schema", "invariants"]


@attrs.frozen(slots=True, init=False)
class Node:
    """One node of the task tree, immutable; its fields are the schema's, in its order.

    The constructor checks what the schema checks of one node: each field's type, a non-empty
    `id`, and `attempts` and `max_attempts` at least 0, raising `TypeError` (a wrong type),
    `ValueError` (a value out of range) or `InvalidNodeFields` (both) naming every such field.
    `acceptance` and `children` may be any iterable (they are kept as tuples) and `next` the
    string value of a `NodeNext`. Rules across nodes or fields (unique and usable ids,
    `attempts <= max_attempts`, sibling order) are the tree's invariants, checked by
    `runner_core.validation.invariants`, so an invalid tree can still be built and judged.
    """

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

    def __init__(
        self,
        id: str,
        order: int,
        title: str,
        goal: str,
        acceptance: Iterable[str],
        next: NodeNext | NodeNextValue,
        passes: bool,
        attempts: int,
        max_attempts: int,
        children: Iterable[Node] = (),
    ) -> None:
        given = (id, order, title, goal, acceptance, next, passes, attempts, max_attempts, children)
        try:
            values = [check(value) for check, value in zip(_CHECKS, given, strict=True)]
        except (TypeError, ValueError):
            raise _refusal(given) from None
        self.__attrs_init__(*values)

    @property
    def is_leaf(self) -> bool:
        """Whether the node has no children."""
        return not self.children


def _kind_error(field: str, expected: str, value: object) -> TypeError:
    return TypeError(f"Node.{field} must be {expected}, not {type(value).__name__}")


def _text(field: str, value: object, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _kind_error(field, "a str", value)
    if non_empty and not value:
        raise ValueError(f"Node.{field} must not be empty")
    return value


def _integer(field: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _kind_error(field, "an int", value)
    return value


def _count(field: str, value: object) -> int:
    count = _integer(field, value)
    if count < 0:
        raise ValueError(f"Node.{field} must be at least 0, not {count}")
    return count


def _flag(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _kind_error(field, "a bool", value)
    return value


def _next_of(value: object) -> NodeNext:
    if not isinstance(value, str):
        raise _kind_error("next", "a NodeNext or its value", value)
    try:
        return NodeNext(value)
    except ValueError:
        choices = " or ".join(repr(member.value) for member in NodeNext)
        raise ValueError(f"Node.next must be {choices}, not {value!r}") from None


def _items(field: str, values: object, kind: type[Any]) -> tuple[Any, ...]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise _kind_error(field, f"an iterable of {kind.__name__}", values)
    items = tuple(values)
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise TypeError(
                f"Node.{field}[{index}] must be a {kind.__name__}, not {type(item).__name__}"
            )
    return items


_CHECKS: tuple[Callable[[Any], Any], ...] = (
    lambda value: _text("id", value, non_empty=True),
    lambda value: _integer("order", value),
    lambda value: _text("title", value),
    lambda value: _text("goal", value),
    lambda value: _items("acceptance", value, str),
    _next_of,
    lambda value: _flag("passes", value),
    lambda value: _count("attempts", value),
    lambda value: _count("max_attempts", value),
    lambda value: _items("children", value, Node),
)


class InvalidNodeFields(TypeError, ValueError):
    """Some fields given to `Node` have the wrong type and others a value out of range."""


class UnknownSelectedNode(KeyError, ValueError):
    """The node a change was asked for (a state update, a decomposition) is not in the tree.

    A `KeyError`, as a missing key of the tree, and a `ValueError`, as a bad argument; its text
    is the message alone (a `KeyError` would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _refusal(given: tuple[Any, ...]) -> Exception:
    """One error naming every field `given` that its check refuses, of their common kind."""
    problems: list[Exception] = []
    for check, value in zip(_CHECKS, given, strict=True):
        try:
            check(value)
        except (TypeError, ValueError) as problem:
            problems.append(problem)
    message = "; ".join(map(str, problems))
    kinds = {type(problem) for problem in problems}
    return kinds.pop()(message) if len(kinds) == 1 else InvalidNodeFields(message)


# Sets the fields of a bare `object.__new__(Node)` without checking them: for the tree parser
# alone, which has checked every value against the schema and builds up to millions of nodes
# per read (the checks would cost it about a tenth of its time).
set_node_fields: Callable[..., None] = Node.__attrs_init__


def trusted_node(*values: Any) -> Node:
    """A `Node` of field values already checked, in field order, children a tuple of nodes."""
    node: Node = object.__new__(Node)
    set_node_fields(node, *values)
    return node


# The schema's field order; canonical JSON writes keys in exactly this order.
NODE_FIELDS: tuple[str, ...] = tuple(field.name for field in attrs.fields(Node))

# A node's ancestors' ids, root first: shared by siblings, so a walk allocates one per parent.
Ancestors = tuple[str, ...]


def sort_key(node: Node) -> tuple[int, str]:
    """The canonical sibling order: by `order`, then by `id`."""
    return (node.order, node.id)


def path_of(ancestors: Ancestors, node_id: str) -> str:
    """A node's path: its ancestors' ids and its own, joined by `/`."""
    return "/".join((*ancestors, node_id))


def iter_preorder(root: Node) -> Iterator[tuple[Node, Ancestors]]:
    """Yield `(node, ancestors)` depth-first, children in the order they are stored."""
    walked: list[tuple[Node, Ancestors]] = []

    def visit(node: Node, ancestors: Ancestors) -> None:
        walked.append((node, ancestors))
        if node.children:
            below = (*ancestors, node.id)
            for child in node.children:
                visit(child, below)

    visit(root, ())
    return iter(walked)


def canonical_preorder(tree: Node) -> list[tuple[Node, str, int]]:
    """`(node, path, depth)` depth-first with siblings in `(order, id)` order, whatever the
    order they are stored in."""
    walked: list[tuple[Node, str, int]] = []
    stack: list[tuple[Node, str, int]] = [(tree, tree.id, 0)]
    while stack:
        node, path, depth = stack.pop()
        walked.append((node, path, depth))
        for child in sorted(node.children, key=sort_key, reverse=True):
            stack.append((child, f"{path}/{child.id}", depth + 1))
    return walked


def rebuild_postorder(root: Node, rebuild: Callable[[Node, tuple[Node, ...]], Node]) -> Node:
    """A new tree where every node is `rebuild(node, its already-rebuilt children)`.

    Children are rebuilt before their parent, left to right. Every structural transformation
    of the core goes through here.
    """
    children = root.children
    if not children:
        return rebuild(root, children)
    return rebuild(root, tuple([rebuild_postorder(child, rebuild) for child in children]))


def with_children(node: Node, children: tuple[Node, ...]) -> Node:
    """`node` with these children: the very node when they are the very same ones."""
    if same_objects(children, node.children):
        return node
    return attrs.evolve(node, children=children)


def sort_children(root: Node) -> Node:
    """Canonical order: siblings sorted by `(order, id)` at every level."""
    return rebuild_postorder(
        root, lambda node, children: with_children(node, in_canonical_order(children))
    )


def in_canonical_order(siblings: tuple[Node, ...]) -> tuple[Node, ...]:
    """`siblings` sorted by `sort_key`: the very tuple when it already is."""
    for left, right in pairwise(siblings):
        if sort_key(left) > sort_key(right):
            return tuple(sorted(siblings, key=sort_key))
    return siblings


def same_objects(left: tuple[Node, ...], right: tuple[Node, ...]) -> bool:
    """Whether two child tuples hold the very same nodes: the O(1)-per-child equality."""
    return len(left) == len(right) and all(map(operator.is_, left, right))


def index_by_id(root: Node) -> tuple[Mapping[str, Node], Mapping[str, str | None]]:
    """Every id's node and its parent's id; the first occurrence in pre-order wins.

    Internal to the core (plain dicts behind read-only types): built once per check, on trees
    of up to 100k nodes, where a persistent map would cost more than the check itself.
    """
    nodes: dict[str, Node] = {}
    parents: dict[str, str | None] = {}

    def visit(node: Node, parent: str | None) -> None:
        if node.id not in nodes:
            nodes[node.id] = node
            parents[node.id] = parent
        for child in node.children:
            visit(child, node.id)

    visit(root, None)
    return nodes, parents


def nodes_by_id(root: Node) -> Mapping[str, Node]:
    """Map every id to its node; the first occurrence in pre-order wins (internal, as above)."""
    nodes: dict[str, Node] = {}

    def visit(node: Node) -> None:
        nodes.setdefault(node.id, node)
        for child in node.children:
            visit(child)

    visit(root)
    return nodes


def count_nodes(root: Node) -> int:
    """How many nodes the tree rooted at `root` holds, `root` included."""
    return 1 + sum(map(count_nodes, root.children))
