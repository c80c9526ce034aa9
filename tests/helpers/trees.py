"""Concise task trees for the runner_core specifications.

`node(...)` builds the JSON form (what tree.json holds), `tree(...)` the immutable `Node`.
Both take the same defaults, so a test only spells out the fields it is about.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from runner_core import Node, tree_from_json
from runner_core.tree.model import iter_preorder

DEFAULT_MAX_ATTEMPTS = 3


def node(id: str, *children: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A task-tree node as JSON data; unspecified fields take neutral defaults."""
    unknown = set(fields) - {
        "order",
        "title",
        "goal",
        "acceptance",
        "next",
        "passes",
        "attempts",
        "max_attempts",
    }
    assert not unknown, f"unknown node fields {sorted(unknown)}"
    return {
        "id": id,
        "order": fields.get("order", 0),
        "title": fields.get("title", f"title of {id}"),
        "goal": fields.get("goal", f"goal of {id}"),
        "acceptance": list(fields.get("acceptance", [])),
        "next": fields.get("next", "execute"),
        "passes": fields.get("passes", False),
        "attempts": fields.get("attempts", 0),
        "max_attempts": fields.get("max_attempts", DEFAULT_MAX_ATTEMPTS),
        "children": list(children),
    }


def tree(id: str, *children: Node, **fields: Any) -> Node:
    """A `Node` with the same defaults as `node`; children are kept in the order given."""
    return attrs.evolve(tree_from_json(node(id, **fields)), children=children)


def text_of(data: dict[str, Any]) -> str:
    """tree.json text for JSON data, as an agent might leave it (not canonical)."""
    return json.dumps(data, ensure_ascii=False)


def find(root: Node, node_id: str) -> Node:
    """The first node with this id; fails the test when there is none."""
    for candidate, _ in iter_preorder(root):
        if candidate.id == node_id:
            return candidate
    raise AssertionError(f"no node '{node_id}' in the tree")


def ids(root: Node) -> list[str]:
    """Every id in stored pre-order."""
    return [candidate.id for candidate, _ in iter_preorder(root)]


def chain_text(depth: int, *, bottom_passes: bool = False) -> str:
    """Compact JSON of a chain `n0 -> n1 -> ... -> n<depth-1>`, built without recursion."""

    def opening(index: int) -> str:
        passes = "true" if bottom_passes and index == depth - 1 else "false"
        return (
            f'{{"id":"n{index}","order":0,"title":"t","goal":"g","acceptance":[],'
            f'"next":"execute","passes":{passes},"attempts":0,"max_attempts":3,"children":['
        )

    return "".join(opening(index) for index in range(depth)) + "]}" * depth


def chain_json(depth: int, **bottom_fields: Any) -> dict[str, Any]:
    """JSON data of a chain `n0 -> ... -> n<depth-1>`; `bottom_fields` go on the deepest node."""
    current = node(f"n{depth - 1}")
    current.update(bottom_fields)
    for index in range(depth - 2, -1, -1):
        current = node(f"n{index}", current)
    return current


def depth_of(root: Node) -> int:
    """The number of nodes on the longest root-to-leaf path."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in current.children)
    return deepest
