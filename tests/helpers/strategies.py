"""Strategies only this project's own tests use: the status/guard pairs the state update's
table has rows for, and tree JSON broken at random (fuzz: no message is stated) to play the
validators against each other. The strategies a user of the library meets are in
`runner_core.testing`."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from runner_core import AgentStatus, GuardOutcome, Node, tree_from_json, tree_to_json
from runner_core.testing.trees import JsonNode, trees

# The rows of the transition table: guards run only for `done`.
STATUS_GUARD_PAIRS: tuple[tuple[AgentStatus, GuardOutcome], ...] = (
    (AgentStatus.DONE, GuardOutcome.PASS),
    (AgentStatus.DONE, GuardOutcome.FAIL),
    (AgentStatus.DONE, GuardOutcome.SKIPPED),
    (AgentStatus.RETRY, GuardOutcome.SKIPPED),
    (AgentStatus.DECOMPOSED, GuardOutcome.SKIPPED),
)
status_guard_pairs = st.sampled_from(STATUS_GUARD_PAIRS)


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
MUTATIONS = (
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


def _object_nodes(root: Any) -> list[JsonNode]:
    """Every object node of possibly broken tree JSON."""
    found: list[JsonNode] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        found.append(node)
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(children)
    return found


@st.composite
def mutated_tree_jsons(draw: st.DrawFn) -> Any:
    """A valid tree's JSON after 1-3 random mutations (missing, extra, retyped, negative or
    out-of-enum fields, non-object children or root); some keep it valid, most do not. For
    fuzzing validators against each other: no message is stated."""
    tree = draw(trees(max_nodes=10, canonical=None))
    root: Any = tree_to_json(tree)
    fields = tuple(root)
    for _ in range(draw(st.integers(1, 3))):
        if not isinstance(root, dict):
            break
        node = draw(st.sampled_from(_object_nodes(root)))
        kind = draw(st.sampled_from(MUTATIONS))
        present = [field for field in fields if field in node]
        if kind == "delete" and present:
            del node[draw(st.sampled_from(present))]
        elif kind == "add_field":
            key = draw(st.sampled_from(("extra", "Id", "child", "", "passed", "children ")))
            node[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif kind == "retype" and present:
            node[draw(st.sampled_from(present))] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif kind == "negative":
            field = draw(st.sampled_from(("order", "attempts", "max_attempts")))
            node[field] = draw(st.integers(-(2**40), -1))
        elif kind == "empty_id":
            node["id"] = ""
        elif kind == "bad_enum":
            node["next"] = draw(st.sampled_from(("Execute", "", "decomposed", "done")))
        elif kind == "acceptance_item" and isinstance(node.get("acceptance"), list):
            node["acceptance"].append(copy.deepcopy(draw(st.sampled_from(ODD_VALUES))))
        elif kind == "child_not_object" and isinstance(node.get("children"), list):
            node["children"].append(copy.deepcopy(draw(st.sampled_from(ODD_VALUES[:-1]))))
        elif kind == "integral_float":
            field = draw(st.sampled_from(("order", "attempts", "max_attempts")))
            if isinstance(node.get(field), int) and not isinstance(node.get(field), bool):
                node[field] = float(node[field])
        elif kind == "root_not_object" and node is root:
            root = copy.deepcopy(draw(st.sampled_from(ODD_VALUES[:-1])))
    return root


@st.composite
def invariant_breaking_trees(draw: st.DrawFn) -> Node:
    """Schema-shaped trees with 1-4 breakages among duplicate ids, max_attempts 0, attempts
    over max_attempts and reversed siblings (which may also happen to keep a tree valid). For
    checking error lists as a whole: no message is stated (`invalid_trees` states them)."""
    root = tree_to_json(draw(trees(canonical=False, max_nodes=12)))
    nodes = _object_nodes(root)
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
