"""Decomposition: turning a decomposer's child specs into nodes under the selected leaf.

Decides the new children's ids (`<parent>.<n>`, the lowest n free anywhere in the tree, in
spec order), their `order` (the spec's index) and their runner-owned fields. Also decides
which decomposer outputs are agent errors. Never reads the agent's files. Child specs come as
`ChildSpec`s or as the decomposer output's plain child objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

import attrs

from runner_core.tree.model import (
    ID_MAX_LENGTH,
    Node,
    NodeNext,
    NodeNextValue,
    UnknownSelectedNode,
    nodes_by_id,
    rebuild_postorder,
    with_children,
)


def _strings(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


def _next(value: NodeNext | NodeNextValue) -> NodeNext:
    return NodeNext(value)


@attrs.frozen(slots=True)
class ChildSpec:
    """One child a decomposer asks for: the fields it chooses. The runner gives the child its
    id, order and attempts when `decompose_node` adds it. `acceptance` may be any iterable of
    strings (kept as a tuple) and `next` the string value of a `NodeNext`."""

    title: str
    goal: str
    acceptance: tuple[str, ...] = attrs.field(converter=_strings)
    next: NodeNext = attrs.field(converter=_next)


def child_spec(child: ChildSpec | Mapping[str, Any]) -> ChildSpec:
    """A child spec, from a `ChildSpec` or a schema-valid child object of decomposer output."""
    if isinstance(child, ChildSpec):
        return child
    return ChildSpec(
        title=child["title"],
        goal=child["goal"],
        acceptance=tuple(child["acceptance"]),
        next=NodeNext(child["next"]),
    )


def child_specs_from_output(output: Mapping[str, Any]) -> tuple[ChildSpec, ...]:
    """Child specs of a schema-valid decomposer output, in output order."""
    return tuple(map(child_spec, output["children"]))


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


def _free_child_ids(parent_id: str, taken: Set[str], count: int) -> list[str]:
    """`<parent>.<n>` for the first free n; a parent id too long for that is cut so every
    child id stays within ID_MAX_LENGTH (never a child the invariants refuse)."""
    ids: list[str] = []
    n = 1
    while len(ids) < count:
        suffix = f".{n}"
        candidate = parent_id[: ID_MAX_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            ids.append(candidate)
        n += 1
    return ids


def decompose_node(
    tree: Node,
    selected_id: str,
    child_specs: Iterable[ChildSpec | Mapping[str, Any]],
    max_attempts_default: int,
) -> Node:
    """The tree with `child_specs` added as children of `selected_id`.

    Raises `UnknownSelectedNode` when `selected_id` is not in `tree`, and what `Node` raises
    (`TypeError`, `ValueError` or `InvalidNodeFields`) for a child field it refuses."""
    specs = tuple(map(child_spec, child_specs))
    ids = _free_child_ids(selected_id, nodes_by_id(tree).keys(), len(specs))
    new_children = tuple(
        Node(
            id=child_id,
            order=index,
            passes=False,
            attempts=0,
            max_attempts=max_attempts_default,
            **attrs.asdict(spec, recurse=False),
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
        raise UnknownSelectedNode(f"selected node '{selected_id}' is not in the tree")
    return result
