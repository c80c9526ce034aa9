"""Strategies for the property suite: valid task trees, and what an agent may do to them.

Trees are valid by construction: unique ids, `max_attempts > 0`, `attempts <= max_attempts`
and, unless asked otherwise, derived passes (a parent passes iff all its children pass).

Agent edits come in three families, each drawn against the tree as the previous edits left it:
- `open_edit`: confined to open nodes (retitle, change goal/acceptance/order/next/max_attempts,
  remove an open subtree holding no passed node, move an open node under another open node,
  add a new node under an open node; when asked, lower a max_attempts below the attempts
  used). "Open" and "passed" always refer to the tree before the agent ran: that is what the
  runner protects.
- `passed_edit`: changes one passed node's value or place, and names it.
- `runner_owned_edit`: rewrites `passes` or `attempts` of an existing node.

Edits are drawn through a `Chooser`, so the stateful test can replay the same generators from a
seeded `random.Random` when it drives a run to its end outside Hypothesis's control.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from runner_core import AgentStatus, GuardOutcome, Node, NodeNext, tree_from_json, tree_to_json
from runner_core.model import NODE_FIELDS

JsonNode = dict[str, Any]
T = TypeVar("T")

# A small alphabet makes `(order, id)` ties, shared prefixes and `<parent>.<n>` look-alikes
# common. Quotes, `/` and spaces stay out so ids can be read back out of messages and paths.
ID_ALPHABET = "abxy019._-é"
ids = st.text(alphabet=ID_ALPHABET, min_size=1, max_size=4)
# Free text: any code point but surrogates, which UTF-8 cannot encode.
texts = st.text(max_size=12)
orders = st.integers(min_value=-3, max_value=3)

TEXT_FIELDS = ("title", "goal")
# The transitions of seed 000's table: guards run only for `done`.
STATUS_GUARD_PAIRS: tuple[tuple[AgentStatus, GuardOutcome], ...] = (
    (AgentStatus.DONE, GuardOutcome.PASS),
    (AgentStatus.DONE, GuardOutcome.FAIL),
    (AgentStatus.DONE, GuardOutcome.SKIPPED),
    (AgentStatus.RETRY, GuardOutcome.SKIPPED),
    (AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED),
)
status_guard_pairs = st.sampled_from(STATUS_GUARD_PAIRS)


# ---------------------------------------------------------------- trees


@st.composite
def trees(
    draw: st.DrawFn,
    *,
    max_depth: int = 4,
    max_width: int = 4,
    max_nodes: int = 25,
    max_attempts_cap: int = 4,
    canonical: bool = True,
    derived_passes: bool = True,
    leaf_passes: st.SearchStrategy[bool] | None = None,
    attempts: st.SearchStrategy[int] | None = None,
) -> Node:
    """A valid tree; siblings in `(order, id)` order when `canonical`, else as drawn.

    With `derived_passes=False` every node's `passes` is drawn freely (still schema-valid, but
    a parent may disagree with its children). `leaf_passes` draws a leaf's `passes` (any
    boolean by default);
    `attempts`, if given, a node's attempts (capped at its max_attempts), else any of
    `0..max_attempts`.
    """
    used: set[str] = set()
    # A size budget drawn first gives small trees as well as ones that fill `max_nodes`.
    remaining = draw(st.just(max_nodes) | st.integers(1, max_nodes))

    def fresh_id() -> str:
        candidate = draw(ids)
        if candidate in used:
            # `~` is not in the alphabet and len(used) only grows, so this is new.
            candidate = f"{candidate}~{len(used)}"
        used.add(candidate)
        return candidate

    def build(depth: int) -> Node:
        nonlocal remaining
        remaining -= 1
        node_id = fresh_id()
        children: list[Node] = []
        width = draw(st.integers(0, max_width)) if depth < max_depth else 0
        for _ in range(width):
            if remaining <= 0:
                break
            children.append(build(depth + 1))
        if canonical:
            children.sort(key=lambda child: (child.order, child.id))
        max_attempts = draw(st.integers(1, max_attempts_cap))
        if children and derived_passes:
            passes = all(child.passes for child in children)
        else:
            passes = draw(
                leaf_passes if leaf_passes is not None and not children else st.booleans()
            )
        used = draw(st.integers(0, max_attempts) if attempts is None else attempts)
        return Node(
            id=node_id,
            order=draw(orders),
            title=draw(texts),
            goal=draw(texts),
            acceptance=tuple(draw(st.lists(texts, max_size=3))),
            next=draw(st.sampled_from(NodeNext)),
            passes=passes,
            attempts=min(used, max_attempts),
            max_attempts=max_attempts,
            children=tuple(children),
        )

    return build(0)


@st.composite
def trees_with_a_passed_node(draw: st.DrawFn, *, max_nodes: int = 25) -> Node:
    """A valid tree with at least one passed node: if none passed, one leaf is made to pass
    and its ancestors' passes derived again."""
    tree = draw(trees(max_nodes=max_nodes))
    if passed_ids(tree):
        return tree
    root = tree_to_json(tree)
    leaves = [node for node, _ in index_json_lenient(root) if not node["children"]]
    draw(st.sampled_from(leaves))["passes"] = True

    def derive(node: JsonNode) -> bool:
        if node["children"]:
            node["passes"] = all([derive(child) for child in node["children"]])
        passes: bool = node["passes"]
        return passes

    derive(root)
    return tree_from_json(root)


def any_order_trees(**options: Any) -> st.SearchStrategy[Node]:
    """Valid trees whose siblings may or may not be in canonical order."""
    return st.booleans().flatmap(lambda canonical: trees(canonical=canonical, **options))


def tree_jsons(**options: Any) -> st.SearchStrategy[JsonNode]:
    """The JSON objects of valid trees, as tree.json holds them."""
    return trees(**options).map(tree_to_json)


@st.composite
def chains(draw: st.DrawFn, *, max_depth: int = 1200) -> Node:
    """A single path of nodes, deep enough to overflow a recursive JSON parser or validator."""
    depth = draw(st.integers(1, max_depth))
    node = Node(f"n{depth}", 0, "leaf", "goal", (), NodeNext.EXECUTE, draw(st.booleans()), 0, 1)
    for level in range(depth - 1, 0, -1):
        node = Node(
            f"n{level}", level % 3, "t", "g", ("a",), NodeNext.DECOMPOSE, node.passes, 0, 2, (node,)
        )
    return node


def preorder(tree: Node) -> list[tuple[Node, Node | None]]:
    """Every `(node, parent)` of a tree, parents first; a plain recursive walk."""
    found: list[tuple[Node, Node | None]] = []

    def walk(node: Node, parent: Node | None) -> None:
        found.append((node, parent))
        for child in node.children:
            walk(child, node)

    walk(tree, None)
    return found


def passed_ids(tree: Node) -> frozenset[str]:
    return frozenset(node.id for node, _ in preorder(tree) if node.passes)


# ---------------------------------------------------------------- choosing


class Chooser(Protocol):
    """Where generators get their choices from: Hypothesis draws, or a seeded Random."""

    def integer(self, low: int, high: int) -> int: ...

    def text(self) -> str: ...


@dataclass(frozen=True)
class DrawChooser:
    draw: Callable[[st.SearchStrategy[Any]], Any]

    def integer(self, low: int, high: int) -> int:
        value: int = self.draw(st.integers(low, high))
        return value

    def text(self) -> str:
        value: str = self.draw(texts)
        return value


# What a seeded run's agent writes: plain letters, JSON escapes and multi-byte characters.
RANDOM_TEXT_CHARS = 'ab z"\\\n\t\x00é€😀'


@dataclass(frozen=True)
class RandomChooser:
    rng: random.Random

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self) -> str:
        return "".join(self.rng.choice(RANDOM_TEXT_CHARS) for _ in range(self.rng.randint(0, 8)))


def choose_from(choose: Chooser, items: Sequence[T]) -> T:
    return items[choose.integer(0, len(items) - 1)]


def choose_bool(choose: Chooser) -> bool:
    return choose.integer(0, 1) == 1


# ---------------------------------------------------------------- edits


@dataclass(frozen=True)
class Edit:
    """One change an agent makes to tree.json, applied to its JSON data in place.

    kinds: `set` (field := value), `remove` (the node and its subtree), `move` (under the
    node whose id is `value`, appended last), `add` (the JSON node `value` as a new last child).
    """

    kind: str
    node_id: str
    field: str = ""
    value: Any = None

    def apply(self, root: JsonNode) -> None:
        index = index_json(root)
        node, parent = index[self.node_id]
        if self.kind == "set":
            node[self.field] = copy.deepcopy(self.value)
            if self.field == "max_attempts" and isinstance(self.value, int):
                # The agent keeps its file valid: attempts follow a lowered maximum down.
                node["attempts"] = min(node["attempts"], self.value)
        elif self.kind == "remove":
            assert parent is not None, "the root cannot be removed"
            parent["children"].remove(node)
        elif self.kind == "move":
            assert parent is not None, "the root cannot be moved"
            parent["children"].remove(node)
            index[self.value][0]["children"].append(node)
        elif self.kind == "add":
            node["children"].append(copy.deepcopy(self.value))
        else:
            raise AssertionError(f"unknown edit kind {self.kind!r}")


def index_json(root: JsonNode) -> dict[str, tuple[JsonNode, JsonNode | None]]:
    """id → (JSON node, JSON parent) for a tree with unique ids."""
    index: dict[str, tuple[JsonNode, JsonNode | None]] = {}
    stack: list[tuple[JsonNode, JsonNode | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        index[node["id"]] = (node, parent)
        stack.extend((child, node) for child in node["children"])
    return index


def subtree_ids(node: JsonNode) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        found.add(current["id"])
        stack.extend(current["children"])
    return found


def apply_edits(tree: Node, edits: Sequence[Edit]) -> Node:
    """The tree an agent leaves after making `edits` (siblings in whatever order they end up)."""
    root = tree_to_json(tree)
    for edit in edits:
        edit.apply(root)
    return tree_from_json(root)


def _other_text(choose: Chooser, old: str) -> str:
    new = choose.text()
    return new if new != old else old + "!"


def _new_value(
    choose: Chooser, node: JsonNode, field: str, *, max_attempts_cap: int, max_floor: int
) -> Any:
    """A value for `field` different from the node's current one (and still schema-valid)."""
    old = node[field]
    if field in TEXT_FIELDS:
        return _other_text(choose, old)
    if field == "acceptance":
        new = [choose.text() for _ in range(choose.integer(0, 2))]
        return new if new != old else [*old, "!"]
    if field == "order":
        return old + choose_from(choose, (-2, -1, 1, 2))
    if field == "next":
        return "decompose" if old == "execute" else "execute"
    if field == "passes":
        return not old
    if field == "attempts":
        return old + 1 if old < node["max_attempts"] else old - 1
    if field == "max_attempts":
        low = max(1, max_floor)
        choices = [value for value in range(low, max(low, max_attempts_cap) + 1) if value != old]
        return choose_from(choose, choices) if choices else old + 1
    raise AssertionError(f"no new values for field {field!r}")


def new_node_json(choose: Chooser, node_id: str, *, max_attempts_cap: int) -> JsonNode:
    """A leaf an agent invents; its runner-owned fields are whatever the agent wrote."""
    max_attempts = choose.integer(1, max_attempts_cap)
    return {
        "id": node_id,
        "order": choose.integer(-3, 3),
        "title": choose.text(),
        "goal": choose.text(),
        "acceptance": [choose.text() for _ in range(choose.integer(0, 2))],
        "next": choose_from(choose, ("execute", "decompose")),
        "passes": choose_bool(choose),
        "attempts": choose.integer(0, max_attempts),
        "max_attempts": max_attempts,
        "children": [],
    }


def _fresh_id(choose: Chooser, taken: set[str] | dict[str, Any]) -> str:
    candidate = f"new.{choose.integer(1, 3)}"
    while candidate in taken:
        candidate += "x"
    return candidate


OPEN_FIELDS = ("title", "goal", "acceptance", "order", "next", "max_attempts")


def open_edit(
    choose: Chooser,
    root: JsonNode,
    passed: frozenset[str],
    *,
    max_attempts_cap: int = 4,
    used_attempts: Mapping[str, int] | None = None,
    lower_max_attempts: bool = False,
) -> Edit | None:
    """An edit that touches no node in `passed`; None when every node passed.

    `max_attempts` is never lowered below the attempts the node has used (`used_attempts`,
    the runner's count before the agent ran) unless `lower_max_attempts`: a tree where it is
    would be invalid once the runner restores its attempts, so review_execution refuses it.
    """
    index = index_json(root)
    open_ids = sorted(node_id for node_id in index if node_id not in passed)
    if not open_ids:
        return None
    kinds = ("field", "field", "remove", "move", "add")
    kind = choose_from(choose, (*kinds, "lower") if lower_max_attempts else kinds)
    if kind == "lower":
        spent = used_attempts or {}
        lowerable = [node_id for node_id in open_ids if spent.get(node_id, 0) >= 2]
        if lowerable:
            node_id = choose_from(choose, lowerable)
            return Edit("set", node_id, "max_attempts", choose.integer(1, spent[node_id] - 1))
    if kind == "remove":
        removable = [
            node_id
            for node_id in open_ids
            if index[node_id][1] is not None and not subtree_ids(index[node_id][0]) & passed
        ]
        if removable:
            return Edit("remove", choose_from(choose, removable))
    if kind == "move":
        movable = [node_id for node_id in open_ids if index[node_id][1] is not None]
        if movable:
            node_id = choose_from(choose, movable)
            node, parent = index[node_id]
            assert parent is not None
            inside = subtree_ids(node)
            targets = [
                target for target in open_ids if target not in inside and target != parent["id"]
            ]
            if targets:
                return Edit("move", node_id, value=choose_from(choose, targets))
    if kind == "add":
        parent_id = choose_from(choose, open_ids)
        new = new_node_json(choose, _fresh_id(choose, index), max_attempts_cap=max_attempts_cap)
        return Edit("add", parent_id, value=new)
    node_id = choose_from(choose, open_ids)
    node = index[node_id][0]
    field = choose_from(choose, OPEN_FIELDS)
    used = (used_attempts or {}).get(node_id, 0)
    floor = 1 if lower_max_attempts else max(node["attempts"], used)
    value = _new_value(choose, node, field, max_attempts_cap=max_attempts_cap, max_floor=floor)
    return Edit("set", node_id, field, value)


PASSED_FIELDS = (*OPEN_FIELDS, "passes", "attempts")


def passed_edit(choose: Chooser, root: JsonNode, passed: frozenset[str]) -> tuple[Edit, str] | None:
    """An edit that changes a passed node's value or place, with that node's id."""
    index = index_json(root)
    targets = sorted(node_id for node_id in index if node_id in passed)
    if not targets:
        return None
    touched = choose_from(choose, targets)
    node, parent = index[touched]
    kind = choose_from(choose, ("field", "add", "remove", "move"))
    if kind == "remove" and parent is not None:
        # The passed node itself, or an ancestor (open or not) whose subtree holds it.
        candidates = [touched]
        while (above := index[candidates[-1]][1]) is not None and above is not root:
            candidates.append(above["id"])
        return Edit("remove", choose_from(choose, candidates)), touched
    if kind == "move" and parent is not None:
        inside = subtree_ids(node)
        destinations = sorted(
            other for other in index if other not in inside and other != parent["id"]
        )
        if destinations:
            return Edit("move", touched, value=choose_from(choose, destinations)), touched
    if kind == "add":
        new = new_node_json(choose, _fresh_id(choose, index), max_attempts_cap=3)
        return Edit("add", touched, value=new), touched
    field = choose_from(choose, PASSED_FIELDS)
    value = _new_value(choose, node, field, max_attempts_cap=4, max_floor=1)
    return Edit("set", touched, field, value), touched


def runner_owned_edit(
    choose: Chooser, root: JsonNode, *, only: frozenset[str] | None = None, valid: bool = True
) -> Edit | None:
    """The agent rewriting `passes` or `attempts` of an existing node (of `only`, if given).

    With `valid`, attempts stay within `0..max_attempts`; otherwise they may exceed it.
    """
    index = index_json(root)
    candidates = sorted(node_id for node_id in index if only is None or node_id in only)
    if not candidates:
        return None
    node_id = choose_from(choose, candidates)
    node = index[node_id][0]
    if choose_bool(choose):
        return Edit("set", node_id, "passes", choose_bool(choose))
    high = node["max_attempts"] if valid else node["max_attempts"] + 3
    return Edit("set", node_id, "attempts", choose.integer(0, high))


@dataclass(frozen=True)
class EditedTree:
    """A tree after an agent's edits; `touched` names the passed node an edit changed, if any."""

    edits: tuple[Edit, ...]
    tree: Node
    touched: str | None = None


EditMaker = Callable[[Chooser, JsonNode], Edit | None]


def make_edits(choose: Chooser, tree: Node, makers: Sequence[EditMaker], count: int) -> EditedTree:
    """Up to `count` edits, each from a maker chosen in turn and drawn against the current tree."""
    root = tree_to_json(tree)
    edits: list[Edit] = []
    for _ in range(count):
        edit = choose_from(choose, makers)(choose, root)
        if edit is not None:
            edit.apply(root)
            edits.append(edit)
    return EditedTree(tuple(edits), tree_from_json(root))


def used_attempts(tree: Node) -> dict[str, int]:
    return {node.id: node.attempts for node, _ in preorder(tree)}


def open_edits_of(
    choose: Chooser,
    tree: Node,
    count: int,
    *,
    rewrite_runner_owned: bool = False,
    lower_max_attempts: bool = False,
) -> EditedTree:
    """`count` edits confined to open nodes; with `rewrite_runner_owned`, some of them rewrite
    passes/attempts of open nodes (within 0..max_attempts)."""
    passed = passed_ids(tree)
    used = used_attempts(tree)
    open_ids = frozenset(used) - passed

    def on_open(choose: Chooser, root: JsonNode) -> Edit | None:
        return open_edit(
            choose, root, passed, used_attempts=used, lower_max_attempts=lower_max_attempts
        )

    def on_owned(choose: Chooser, root: JsonNode) -> Edit | None:
        return runner_owned_edit(choose, root, only=open_ids)

    makers = [on_open, on_owned] if rewrite_runner_owned else [on_open]
    return make_edits(choose, tree, makers, count)


@st.composite
def open_edits(
    draw: st.DrawFn, tree: Node, *, max_edits: int = 4, rewrite_runner_owned: bool = False
) -> EditedTree:
    """Edits confined to the tree's open nodes (and the new nodes they add)."""
    choose = DrawChooser(draw)
    count = choose.integer(0, max_edits)
    return open_edits_of(choose, tree, count, rewrite_runner_owned=rewrite_runner_owned)


@st.composite
def open_and_passed_edits(draw: st.DrawFn, tree: Node, *, max_edits: int = 3) -> EditedTree:
    """Open-node edits, then one edit that changes a passed node (the tree must have one)."""
    choose = DrawChooser(draw)
    passed = passed_ids(tree)
    edited = open_edits_of(choose, tree, choose.integer(0, max_edits))
    root = tree_to_json(edited.tree)
    found = passed_edit(choose, root, passed)
    assert found is not None, "draw from trees with a passed node"
    edit, touched = found
    edit.apply(root)
    return EditedTree((*edited.edits, edit), tree_from_json(root), touched)


@st.composite
def agent_edits(
    draw: st.DrawFn, tree: Node, *, max_edits: int = 6, touch_passed: bool = True
) -> EditedTree:
    """What an agent may write: open edits, passes/attempts rewrites of any node and, with
    `touch_passed`, edits of passed nodes. Open edits never lower `max_attempts` below the
    attempts a node has used.
    """
    choose = DrawChooser(draw)
    passed = passed_ids(tree)
    used = used_attempts(tree)

    def on_open(choose: Chooser, root: JsonNode) -> Edit | None:
        return open_edit(choose, root, passed, used_attempts=used)

    def on_passed(choose: Chooser, root: JsonNode) -> Edit | None:
        found = passed_edit(choose, root, passed)
        return None if found is None else found[0]

    def on_owned(choose: Chooser, root: JsonNode) -> Edit | None:
        return runner_owned_edit(choose, root, valid=False)

    makers = [on_open, on_owned, on_passed] if touch_passed else [on_open, on_owned]
    return make_edits(choose, tree, makers, choose.integer(0, max_edits))


# ---------------------------------------------------------------- broken JSON


# JSON values of every type, to put where another type belongs.
ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    7,
    2**70,
    1.5,
    1.0,
    -2.0,
    "",
    "x",
    "execute",
    [],
    ["a"],
    [1],
    {},
    {"id": "x"},
)


@st.composite
def mutated_tree_jsons(draw: st.DrawFn) -> Any:
    """A valid tree's JSON after 1-3 random mutations; some keep it valid, most do not."""
    root: Any = tree_to_json(draw(any_order_trees(max_nodes=10)))
    for _ in range(draw(st.integers(1, 3))):
        if not isinstance(root, dict):
            break
        nodes = [node for node, _ in index_json_lenient(root)]
        node = draw(st.sampled_from(nodes))
        kind = draw(
            st.sampled_from(
                (
                    "delete",
                    "add_field",
                    "retype",
                    "negative",
                    "empty_id",
                    "bad_enum",
                    "acceptance_item",
                    "child_not_object",
                    "integral_float",
                    "root_not_object",
                )
            )
        )
        present = [field for field in NODE_FIELDS if field in node]
        if kind == "delete" and present:
            del node[draw(st.sampled_from(present))]
        elif kind == "add_field":
            key = draw(st.sampled_from(("extra", "Id", "child", "", "passed", "children ")))
            node[key] = draw(st.sampled_from(ODD_VALUES))
        elif kind == "retype" and present:
            node[draw(st.sampled_from(present))] = draw(st.sampled_from(ODD_VALUES))
        elif kind == "negative":
            field = draw(st.sampled_from(("order", "attempts", "max_attempts")))
            node[field] = draw(st.integers(-(2**40), -1))
        elif kind == "empty_id":
            node["id"] = ""
        elif kind == "bad_enum":
            node["next"] = draw(st.sampled_from(("Execute", "", "decomposed", "done")))
        elif kind == "acceptance_item" and isinstance(node.get("acceptance"), list):
            node["acceptance"].append(draw(st.sampled_from(ODD_VALUES)))
        elif kind == "child_not_object" and isinstance(node.get("children"), list):
            node["children"].append(draw(st.sampled_from(ODD_VALUES[:-1])))
        elif kind == "integral_float":
            field = draw(st.sampled_from(("order", "attempts", "max_attempts")))
            if isinstance(node.get(field), int) and not isinstance(node.get(field), bool):
                node[field] = float(node[field])
        elif kind == "root_not_object" and node is root:
            root = draw(st.sampled_from(ODD_VALUES[:-1]))
    return root


def index_json_lenient(root: JsonNode) -> list[tuple[JsonNode, str]]:
    """Every object node of possibly broken tree JSON, with its JSON path."""
    found: list[tuple[JsonNode, str]] = []
    stack: list[tuple[Any, str]] = [(root, "$")]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append((node, path))
        children = node.get("children")
        if isinstance(children, list):
            stack.extend((child, f"{path}.children[{i}]") for i, child in enumerate(children))
    return found


@st.composite
def invariant_breaking_trees(draw: st.DrawFn) -> Node:
    """Schema-shaped trees with duplicate ids, unsorted siblings or bad attempt counts."""
    root = tree_to_json(draw(trees(canonical=False, max_nodes=12)))
    nodes = [node for node, _ in index_json_lenient(root)]
    for _ in range(draw(st.integers(1, 4))):
        node = draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(("duplicate", "zero_max", "over_max", "reverse")))
        if kind == "duplicate":
            node["id"] = draw(st.sampled_from(nodes))["id"]
        elif kind == "zero_max":
            node["max_attempts"] = 0
        elif kind == "over_max":
            node["attempts"] = node["max_attempts"] + draw(st.integers(1, 3))
        else:
            node["children"].reverse()
    return tree_from_json(root)
