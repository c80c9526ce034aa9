"""Layer 3 of validation: passed nodes are immutable.

Decides, for every node that passed in the previous tree, whether the next tree still holds it
in the same place with the same value (children included). Open nodes are the agent's to
edit, move or remove.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from runner_core.tree.model import NODE_FIELDS, Node, index_by_id
from runner_core.validation.finding import Finding


def passed_node_findings(prev: Node, next_tree: Node) -> tuple[Finding, ...]:
    """Every change to a passed node, sorted by node id, with the fields that changed; empty
    when none was touched."""
    old_nodes, old_parents = index_by_id(prev)
    new_nodes, new_parents = index_by_id(next_tree)
    errors: list[Finding] = []
    for node_id, node in old_nodes.items():
        if not node.passes:
            continue
        if node_id not in new_nodes:
            errors.append(
                _found(node_id, "missing", f"passed node '{node_id}' missing in next tree")
            )
            continue
        old_parent, new_parent = old_parents[node_id], new_parents[node_id]
        if old_parent != new_parent:
            message = (
                f"passed node '{node_id}' moved from parent "
                f"'{_name(old_parent)}' to '{_name(new_parent)}'"
            )
            errors.append(_found(node_id, "moved", message))
    for node_id in _changed_passed_ids(prev, old_nodes, new_nodes):
        before, after = old_nodes[node_id], new_nodes[node_id]
        fields = tuple(
            name for name in NODE_FIELDS if getattr(before, name) != getattr(after, name)
        )
        message = f"passed node '{node_id}' changed in next tree"
        errors.append(attrs.evolve(_found(node_id, "changed", message), fields=fields))
    return tuple(sorted(errors, key=lambda found: (found.node_id or "", found.message)))


def _found(node_id: str, code: str, message: str) -> Finding:
    return Finding("immutability", node_id, None, f"passed_node_{code}", message)


def _name(parent: str | None) -> str:
    return "(none)" if parent is None else parent


def _changed_passed_ids(
    prev: Node, before: Mapping[str, Node], after: Mapping[str, Node]
) -> list[str]:
    """Ids of passed nodes of `prev` whose value differs from the next tree's node of that id.

    A passed subtree equal by value as a whole takes one comparison (the common case); only
    one that differs is looked into, to name each passed node in it that changed. A node is
    its id's passed node when it is the first of that id in pre-order, as in `index_by_id`.
    """
    changed: list[str] = []

    def visit(node: Node) -> None:
        if node.passes and before[node.id] is node:
            other = after.get(node.id)
            if other is not None:
                if node == other:
                    return
                changed.append(node.id)
        for child in node.children:
            visit(child)

    visit(prev)
    return changed
