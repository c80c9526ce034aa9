"""Decomposition: turning a decomposer's child specs into nodes under the selected leaf.

Decides the new children's ids (`<parent>.<n>`, the lowest n free anywhere in the tree, in
spec order), their `order` (the spec's index) and their runner-owned fields. Also decides
which decomposer outputs are agent errors. Never reads the agent's files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from runner_core.model import Node, NodeNext, iter_preorder, rebuild_postorder, with_children


@attrs.frozen(slots=True)
class ChildSpec:
    title: str
    goal: str
    acceptance: tuple[str, ...]
    next: NodeNext


def child_specs_from_output(output: Mapping[str, Any]) -> tuple[ChildSpec, ...]:
    """Child specs of a schema-valid decomposer output, in output order."""
    return tuple(
        ChildSpec(
            title=child["title"],
            goal=child["goal"],
            acceptance=tuple(child["acceptance"]),
            next=NodeNext(child["next"]),
        )
        for child in output["children"]
    )


def decomposition_problems(specs: tuple[ChildSpec, ...]) -> tuple[str, ...]:
    """What makes a schema-valid decomposition unusable; the next attempt is told."""
    if not specs:
        return ("decomposer returned no children",)
    return tuple(
        f"decomposer child {index} has an empty {field}"
        for index, spec in enumerate(specs)
        for field, value in (("title", spec.title), ("goal", spec.goal))
        if not value.strip()
    )


def _free_child_ids(parent_id: str, taken: set[str], count: int) -> list[str]:
    ids: list[str] = []
    n = 1
    while len(ids) < count:
        candidate = f"{parent_id}.{n}"
        if candidate not in taken:
            ids.append(candidate)
        n += 1
    return ids


def decompose_node(
    tree: Node, selected_id: str, child_specs: Iterable[ChildSpec], max_attempts_default: int
) -> Node:
    """The tree with `child_specs` added as children of `selected_id`."""
    specs = tuple(child_specs)
    taken = {node.id for node, _ in iter_preorder(tree)}
    ids = _free_child_ids(selected_id, taken, len(specs))
    new_children = tuple(
        Node(
            child_id,
            index,
            spec.title,
            spec.goal,
            spec.acceptance,
            spec.next,
            False,
            0,
            max_attempts_default,
            (),
        )
        for index, (child_id, spec) in enumerate(zip(ids, specs, strict=True))
    )
    added = False

    def add(node: Node, children: tuple[Node, ...]) -> Node:
        nonlocal added
        if node.id == selected_id and not added:
            added = True
            return with_children(node, children + new_children)
        return with_children(node, children)

    result = rebuild_postorder(tree, add)
    if not added:
        raise KeyError(f"selected node '{selected_id}' is not in the tree")
    return result
