"""What an agent may do to tree.json, and what it may not, each edit named.

Decides nothing the runner decides. Edits come in three families, each drawn against the tree
as the previous edits left it; "open" and "passed" always refer to the tree before the agent
ran, as the runner's immutability check does. Edits are drawn through a `Chooser`, so a
stateful test can replay the same generators from its own source of choices.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core import Node, tree_from_json, tree_to_json
from runner_core.testing.trees import JsonNode, passed_ids, preorder, texts

T = TypeVar("T")
EditKind = Literal["open", "passed", "runner_owned", "any"]
EDIT_KINDS: tuple[EditKind, ...] = ("open", "passed", "runner_owned", "any")

# ---------------------------------------------------------------- choosing


class Chooser(Protocol):
    """Where generators get their choices from: Hypothesis draws, or a seeded random source."""

    def integer(self, low: int, high: int) -> int: ...

    def text(self) -> str: ...


@attrs.frozen(slots=True)
class DrawChooser:
    """Choices drawn by Hypothesis (`draw` of `@st.composite` or `st.data()`)."""

    draw: Callable[[st.SearchStrategy[Any]], Any]

    def integer(self, low: int, high: int) -> int:
        value: int = self.draw(st.integers(low, high))
        return value

    def text(self) -> str:
        value: str = self.draw(texts)
        return value


def choose_from(choose: Chooser, items: Sequence[T]) -> T:
    return items[choose.integer(0, len(items) - 1)]


def choose_bool(choose: Chooser) -> bool:
    return choose.integer(0, 1) == 1


# ---------------------------------------------------------------- edits


@attrs.frozen(slots=True)
class Edit:
    """One change an agent makes to tree.json.

    kinds: `set` (field := value), `remove` (the node and its subtree), `move` (under the
    node whose id is `value`, appended last), `add` (the JSON node `value` as a new last child).
    """

    kind: str
    node_id: str
    field: str = ""
    value: Any = None

    def applied_to(self, root: JsonNode) -> JsonNode:
        """A copy of the tree JSON `root` with this edit made; `root` is left as it was."""
        edited = copy.deepcopy(root)
        index = index_json(edited)
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
        return edited


@attrs.frozen(slots=True)
class EditedTree:
    """A tree after an agent's edits, and what they were.

    `kind` is what `agent_edits` was asked for; `touched` names the passed node the last edit
    changed when it was `"passed"` (the id an immutability error must name).
    """

    edits: tuple[Edit, ...]
    tree: Node
    kind: EditKind | tuple[EditKind, ...] = "any"
    touched: str | None = None


def index_json(root: JsonNode) -> dict[str, tuple[JsonNode, JsonNode | None]]:
    """id → (JSON node, JSON parent) for tree JSON with unique ids."""
    index: dict[str, tuple[JsonNode, JsonNode | None]] = {}
    stack: list[tuple[JsonNode, JsonNode | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        index[node["id"]] = (node, parent)
        stack.extend((child, node) for child in node["children"])
    return index


def _subtree_ids(node: JsonNode) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        found.add(current["id"])
        stack.extend(current["children"])
    return found


TEXT_FIELDS = ("title", "goal")
OPEN_FIELDS = ("title", "goal", "acceptance", "order", "next", "max_attempts")
PASSED_FIELDS = (*OPEN_FIELDS, "passes", "attempts")
# The largest max_attempts an edit writes.
_MAX_ATTEMPTS_CAP = 4


def _new_value(choose: Chooser, node: JsonNode, field: str, *, max_floor: int) -> Any:
    """A value for `field` different from the node's current one (and still schema-valid)."""
    old = node[field]
    if field in TEXT_FIELDS:
        new = choose.text()
        return new if new != old else old + "!"
    if field == "acceptance":
        items = [choose.text() for _ in range(choose.integer(0, 2))]
        return items if items != old else [*old, "!"]
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
        choices = [value for value in range(low, max(low, _MAX_ATTEMPTS_CAP) + 1) if value != old]
        return choose_from(choose, choices) if choices else old + 1
    raise AssertionError(f"no new values for field {field!r}")


def _new_node_json(choose: Chooser, node_id: str) -> JsonNode:
    """A leaf an agent invents; its runner-owned fields are whatever the agent wrote."""
    max_attempts = choose.integer(1, 3)
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


def _fresh_id(choose: Chooser, taken: Mapping[str, Any]) -> str:
    candidate = f"new.{choose.integer(1, 3)}"
    while candidate in taken:
        candidate += "x"
    return candidate


def open_edit(
    choose: Chooser,
    root: JsonNode,
    passed: frozenset[str],
    *,
    used_attempts: Mapping[str, int] | None = None,
    lower_max_attempts: bool = False,
) -> Edit | None:
    """An edit that touches no node in `passed`; None when every node passed.

    Retitle, change goal/acceptance/order/next/max_attempts, remove an open subtree holding no
    passed node, move an open node under another open node, or add a new node under an open
    node. `max_attempts` is never lowered below the attempts the node has used
    (`used_attempts`, the runner's count before the agent ran) unless `lower_max_attempts`:
    such a tree is invalid once the runner restores its attempts, so review_execution refuses it.
    """
    index = index_json(root)
    open_ids = sorted(node_id for node_id in index if node_id not in passed)
    if not open_ids:
        return None
    kinds = ("field", "field", "remove", "move", "add")
    kind = choose_from(choose, (*kinds, "lower") if lower_max_attempts else kinds)
    spent = used_attempts or {}
    if kind == "lower":
        lowerable = [node_id for node_id in open_ids if spent.get(node_id, 0) >= 2]
        if lowerable:
            node_id = choose_from(choose, lowerable)
            return Edit("set", node_id, "max_attempts", choose.integer(1, spent[node_id] - 1))
    if kind == "remove":
        removable = [
            node_id
            for node_id in open_ids
            if index[node_id][1] is not None and not _subtree_ids(index[node_id][0]) & passed
        ]
        if removable:
            return Edit("remove", choose_from(choose, removable))
    if kind == "move":
        movable = [node_id for node_id in open_ids if index[node_id][1] is not None]
        if movable:
            node_id = choose_from(choose, movable)
            node, parent = index[node_id]
            assert parent is not None
            inside = _subtree_ids(node)
            targets = [
                target for target in open_ids if target not in inside and target != parent["id"]
            ]
            if targets:
                return Edit("move", node_id, value=choose_from(choose, targets))
    if kind == "add":
        parent_id = choose_from(choose, open_ids)
        return Edit("add", parent_id, value=_new_node_json(choose, _fresh_id(choose, index)))
    node_id = choose_from(choose, open_ids)
    node = index[node_id][0]
    field = choose_from(choose, OPEN_FIELDS)
    floor = 1 if lower_max_attempts else max(node["attempts"], spent.get(node_id, 0))
    return Edit("set", node_id, field, _new_value(choose, node, field, max_floor=floor))


def passed_edit(choose: Chooser, root: JsonNode, passed: frozenset[str]) -> tuple[Edit, str] | None:
    """An edit that changes a passed node's value or place, with that node's id; None when
    no node in `passed` is left."""
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
        inside = _subtree_ids(node)
        destinations = sorted(
            other for other in index if other not in inside and other != parent["id"]
        )
        if destinations:
            return Edit("move", touched, value=choose_from(choose, destinations)), touched
    if kind == "add":
        return Edit("add", touched, value=_new_node_json(choose, _fresh_id(choose, index))), touched
    field = choose_from(choose, PASSED_FIELDS)
    return Edit("set", touched, field, _new_value(choose, node, field, max_floor=1)), touched


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


EditMaker = Callable[[Chooser, JsonNode], Edit | None]


def _make_edits(
    choose: Chooser, root: JsonNode, makers: Sequence[EditMaker], count: int
) -> tuple[tuple[Edit, ...], JsonNode]:
    """Up to `count` edits, each from a maker chosen in turn and drawn against the current tree."""
    edits: list[Edit] = []
    for _ in range(count):
        edit = choose_from(choose, makers)(choose, root)
        if edit is not None:
            root = edit.applied_to(root)
            edits.append(edit)
    return tuple(edits), root


def _makers(tree: Node, kinds: frozenset[str], lower_max_attempts: bool) -> list[EditMaker]:
    passed = passed_ids(tree)
    used = {node.id: node.attempts for node, _ in preorder(tree)}
    open_ids = frozenset(used) - passed

    def on_open(choose: Chooser, root: JsonNode) -> Edit | None:
        return open_edit(
            choose, root, passed, used_attempts=used, lower_max_attempts=lower_max_attempts
        )

    def on_open_owned(choose: Chooser, root: JsonNode) -> Edit | None:
        return runner_owned_edit(choose, root, only=open_ids)

    def on_owned(choose: Chooser, root: JsonNode) -> Edit | None:
        return runner_owned_edit(choose, root, valid=False)

    def on_passed(choose: Chooser, root: JsonNode) -> Edit | None:
        found = passed_edit(choose, root, passed)
        return None if found is None else found[0]

    makers: list[EditMaker] = []
    if "open" in kinds:
        makers += [on_open, on_open_owned]
    if "runner_owned" in kinds:
        makers.append(on_owned)
    if "passed" in kinds:
        makers.append(on_passed)
    return makers


def open_edits_of(
    choose: Chooser,
    tree: Node,
    count: int,
    *,
    rewrite_runner_owned: bool = False,
    lower_max_attempts: bool = False,
) -> EditedTree:
    """`count` edits confined to open nodes; with `rewrite_runner_owned`, some of them rewrite
    passes/attempts of open nodes (within 0..max_attempts). With `lower_max_attempts`, an edit
    may lower a max_attempts below the attempts used (which review_execution refuses)."""
    makers = _makers(tree, frozenset({"open"}), lower_max_attempts)
    edits, root = _make_edits(
        choose, tree_to_json(tree), makers if rewrite_runner_owned else makers[:1], count
    )
    return EditedTree(edits, tree_from_json(root), "open")


def _kinds_of(kind: EditKind | tuple[EditKind, ...]) -> frozenset[str]:
    kinds = frozenset((kind,) if isinstance(kind, str) else kind)
    unknown = kinds - set(EDIT_KINDS)
    if unknown or not kinds:
        raise InvalidArgument(f"kind must be one of {', '.join(EDIT_KINDS)}, got {kind!r}")
    return frozenset({"open", "passed", "runner_owned"}) if "any" in kinds else kinds


def agent_edits(
    tree: Node, *, kind: EditKind | tuple[EditKind, ...] = "any", max_edits: int = 6
) -> st.SearchStrategy[EditedTree]:
    """Up to `max_edits` edits an agent may make to `tree`, as an `EditedTree`.

    - `"open"`: confined to nodes that had not passed (any field, runner-owned ones within
      range, removals, moves, additions under them): passed_node_findings never
      reports them.
    - `"passed"`: open edits, then one edit (always made) that changes a passed node's value
      or place (`touched` names it; `tree` must hold a passed node): the immutability check
      reports it.
    - `"runner_owned"`: rewrites of `passes`/`attempts` of any nodes, attempts possibly above
      max_attempts: apply_state_updates undoes every one of them.
    - `"any"`, or a tuple of kinds: edits of those families mixed.
    Open edits never lower `max_attempts` below the attempts a node has used.
    """
    kinds = _kinds_of(kind)
    if max_edits < 0:
        raise InvalidArgument(f"max_edits={max_edits} must be >= 0")
    if kinds == {"passed"} and not passed_ids(tree):
        raise InvalidArgument('agent_edits(kind="passed") needs a tree with a passed node')
    return _agent_edits(tree, kind, kinds, max_edits)


@st.composite
def _agent_edits(
    draw: st.DrawFn,
    tree: Node,
    kind: EditKind | tuple[EditKind, ...],
    kinds: frozenset[str],
    max_edits: int,
) -> EditedTree:
    choose = DrawChooser(draw)
    root = tree_to_json(tree)
    if kinds != {"passed"}:
        edits, root = _make_edits(
            choose, root, _makers(tree, kinds, False), choose.integer(0, max_edits)
        )
        return EditedTree(edits, tree_from_json(root), kind)
    opening, root = _make_edits(
        choose,
        root,
        _makers(tree, frozenset({"open"}), False),
        choose.integer(0, max(0, max_edits - 1)),
    )
    found = passed_edit(choose, root, passed_ids(tree))
    assert found is not None, "an open edit never removes a passed node"
    edit, touched = found
    return EditedTree((*opening, edit), tree_from_json(edit.applied_to(root)), kind, touched)
