"""Layer 3 of validation: passed nodes are immutable (SPEC §4.3).

Decides, for every node that passed in the previous tree, whether the next tree still holds it
in the same place with the same value. Open nodes are the agent's to edit, move or remove.
"""

from __future__ import annotations

from runner_core.model import Node, index_by_id, iter_preorder, parent_id, rebuild_postorder


def check_passed_node_immutability(prev: Node, next_tree: Node) -> tuple[str, ...]:
    """Every change to a passed node, sorted by node id; empty when none was touched."""
    after = index_by_id(next_tree)
    unchanged = _unchanged_subtrees(prev, after)
    errors: list[tuple[str, str]] = []
    seen: set[str] = set()
    for node, trail in iter_preorder(prev):
        if not node.passes or node.id in seen:
            continue
        seen.add(node.id)
        found = after.get(node.id)
        if found is None:
            errors.append((node.id, f"passed node '{node.id}' missing in next tree"))
            continue
        old_parent, new_parent = parent_id(trail), found[1]
        if old_parent != new_parent:
            errors.append(
                (
                    node.id,
                    f"passed node '{node.id}' moved from parent "
                    f"'{_name(old_parent)}' to '{_name(new_parent)}'",
                )
            )
        if id(node) not in unchanged:
            errors.append((node.id, f"passed node '{node.id}' changed in next tree"))
    return tuple(message for _, message in sorted(errors))


def _name(parent: str | None) -> str:
    return "(none)" if parent is None else parent


def _unchanged_subtrees(prev: Node, after: dict[str, tuple[Node, str | None]]) -> set[int]:
    """`id()` of every prev node equal by value to the next tree's node of the same id.

    Computed bottom-up so each node is compared once, instead of comparing whole subtrees
    again for every passed ancestor.
    """
    unchanged: set[int] = set()

    def judge(node: Node, children: tuple[Node, ...]) -> Node:
        found = after.get(node.id)
        if found is not None:
            other = found[0]
            if node.own_fields() == other.own_fields() and all(
                id(mine) in unchanged and mine.id == theirs.id
                for mine, theirs in zip(node.children, other.children, strict=True)
            ):
                unchanged.add(id(node))
        return node

    rebuild_postorder(prev, judge)
    return unchanged
