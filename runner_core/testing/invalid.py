"""Trees the runner must refuse: one broken rule each with its exact error line, or fuzz.

Decides nothing the runner decides; the messages below are the contract lines of
`schema_findings` and `invariant_findings` for each broken rule, and this package's tests
check every generated tree against them. Documents are built from valid trees, never mutated
after they are handed out.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import attrs
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core import Node, tree_from_json, tree_to_json
from runner_core.testing.trees import JsonNode, trees
from runner_core.tree.model import sort_children

Layer = Literal["schema", "invariants"]


@attrs.frozen(slots=True)
class InvalidTree:
    """A tree document that breaks one rule; `parse_tree(text)` raises a TreeValidationError
    whose `layer` is `layer` and whose `errors` are exactly `(message,)`."""

    document: Any
    rule: str
    layer: Layer
    message: str

    @property
    def text(self) -> str:
        """The document as tree.json text (siblings as stored, not canonical)."""
        return json.dumps(self.document, indent=2, ensure_ascii=False)


def _walk(root: JsonNode) -> list[tuple[JsonNode, str, str]]:
    """Every node of tree JSON in pre-order with its JSON path and its id path (`a/b/c`)."""
    found: list[tuple[JsonNode, str, str]] = []
    stack: list[tuple[JsonNode, str, str]] = [(root, "$", root["id"])]
    while stack:
        node, json_path, id_path = stack.pop()
        found.append((node, json_path, id_path))
        stack.extend(
            (child, f"{json_path}.children[{i}]", f"{id_path}/{child['id']}")
            for i, child in reversed(list(enumerate(node["children"])))
        )
    return found


# What a field must be, and values of another JSON type to put there.
WRONG_TYPES: Mapping[str, tuple[str, tuple[Any, ...]]] = MappingProxyType(
    {
        "id": ("string", (None, 3, ["a"])),
        "order": ("integer", (None, "1", 1.5, True)),
        "title": ("string", (None, 0, ["t"])),
        "goal": ("string", (None, False, {})),
        "acceptance": ("array", (None, "a", {})),
        "passes": ("boolean", (None, 0, "true")),
        "attempts": ("integer", (None, "0", 0.5, False)),
        "max_attempts": ("integer", (None, "1", 2.5, True)),
        "children": ("array", (None, {}, "[]")),
    }
)
UNKNOWN_KEYS = ("extra", "Id", "passed", "child", "children ")
NOT_OBJECTS: tuple[Any, ...] = (None, 0, "node", [], True)


@st.composite
def _schema_break(draw: st.DrawFn, tree: Node) -> tuple[JsonNode, str, str]:
    """The JSON of `tree` with one schema rule of one node broken, the rule and its message."""
    root = tree_to_json(tree)
    node, at, _ = draw(st.sampled_from(_walk(root)))
    rule = draw(
        st.sampled_from(
            ("required", "unknown key", "type", "empty id", "minimum", "enum", "item", "child")
        )
    )
    if rule == "required":
        field = draw(st.sampled_from(sorted(node)))
        del node[field]
        return root, rule, f"{at} must contain '{field}'"
    if rule == "unknown key":
        key = draw(st.sampled_from(UNKNOWN_KEYS))
        node[key] = copy.deepcopy(draw(st.sampled_from(NOT_OBJECTS)))
        return root, rule, f"{at} must not contain '{key}'"
    if rule == "type":
        field = draw(st.sampled_from(sorted(WRONG_TYPES)))
        kind, values = WRONG_TYPES[field]
        node[field] = copy.deepcopy(draw(st.sampled_from(values)))
        return root, rule, f"{at}.{field} must be {kind}"
    if rule == "empty id":
        node["id"] = ""
        return root, rule, f"{at}.id must be longer than or equal to 1 characters"
    if rule == "minimum":
        field = draw(st.sampled_from(("attempts", "max_attempts")))
        node[field] = draw(st.integers(-(2**40), -1))
        return root, rule, f"{at}.{field} must be bigger than or equal to 0"
    if rule == "enum":
        node["next"] = draw(st.sampled_from(("Execute", "", "decomposed", "done")))
        return root, rule, f"{at}.next must be one of ['execute', 'decompose']"
    if rule == "item":
        node["acceptance"].append(draw(st.sampled_from((None, 1, ["a"], {}))))
        return root, rule, f"{at}.acceptance[{len(node['acceptance']) - 1}] must be string"
    node["children"].append(copy.deepcopy(draw(st.sampled_from(NOT_OBJECTS))))
    return root, rule, f"{at}.children[{len(node['children']) - 1}] must be object"


@st.composite
def _invariant_break(draw: st.DrawFn, tree: Node) -> tuple[JsonNode, str, str]:
    """The JSON of a canonical `tree` with one invariant broken, the rule and its message."""
    root = tree_to_json(tree)
    nodes = _walk(root)
    parents = [entry for entry in nodes if len(entry[0]["children"]) > 1]
    rules = ["max_attempts", "attempts"] + (["duplicate id"] if len(nodes) > 1 else [])
    rule = draw(st.sampled_from(rules + (["unsorted"] if parents else [])))
    if rule == "duplicate id":
        pair = st.lists(st.sampled_from(nodes), min_size=2, max_size=2, unique_by=lambda e: e[1])
        first, second = draw(pair)
        second[0]["id"] = first[0]["id"]
        # Siblings stay sorted, so the duplicate is the one broken rule.
        root = tree_to_json(sort_children(tree_from_json(root)))
        seen: set[str] = set()
        for node, _, id_path in _walk(root):
            if node["id"] in seen:
                return root, rule, f"duplicate id '{node['id']}' at {id_path}"
            seen.add(node["id"])
        raise AssertionError("two nodes share an id")
    if rule == "unsorted":
        node, _, id_path = draw(st.sampled_from(parents))
        node["children"].reverse()
        return root, rule, f"{id_path}: children must be sorted by (order,id)"
    node, _, id_path = draw(st.sampled_from(nodes))
    if rule == "max_attempts":
        node["max_attempts"] = node["attempts"] = 0
        return root, rule, f"{id_path}: max_attempts must be > 0"
    spent = node["attempts"] = node["max_attempts"] + draw(st.integers(1, 3))
    return root, rule, f"{id_path}: attempts {spent} exceeds max_attempts {node['max_attempts']}"


def invalid_trees(
    *, layer: Layer | None = None, max_nodes: int = 10
) -> st.SearchStrategy[InvalidTree]:
    """Documents that break exactly one rule of the tree schema (`layer="schema"`) or of the
    tree invariants (`layer="invariants"`: duplicate id, max_attempts 0, attempts over
    max_attempts, unsorted siblings), either when None, each with the one error line the
    runner reports for it: see `InvalidTree`."""
    if layer not in (None, "schema", "invariants"):
        raise InvalidArgument(f"layer must be 'schema', 'invariants' or None, got {layer!r}")
    layers: tuple[Layer, ...] = ("schema", "invariants") if layer is None else (layer,)
    return st.sampled_from(layers).flatmap(lambda chosen: _invalid_trees(chosen, max_nodes))


@st.composite
def _invalid_trees(draw: st.DrawFn, layer: Layer, max_nodes: int) -> InvalidTree:
    tree = draw(trees(max_nodes=max_nodes))
    breaker = _schema_break if layer == "schema" else _invariant_break
    root, rule, message = draw(breaker(tree))
    return InvalidTree(root, rule, layer, message)
