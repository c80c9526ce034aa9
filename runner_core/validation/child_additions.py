"""Layer 5 of validation: where new children may appear (SPEC §4.5).

Decides whether nodes that are new in the next tree hang only under the selected node, and
only while decomposing. Moving an existing open node is not an addition.
"""

from __future__ import annotations

from runner_core.tree.model import Node, iter_preorder, nodes_by_id


def validate_child_additions_restricted(
    prev: Node, next_tree: Node, selected_id: str | None
) -> tuple[str, ...]:
    """Every node that gained a new child it may not have, sorted.

    `selected_id` is the node being decomposed, or None in execute mode, where no node may
    gain children.
    """
    known = nodes_by_id(prev)
    errors: set[str] = set()
    for node, ancestors in iter_preorder(next_tree):
        if node.id in known or not ancestors or ancestors[-1] == selected_id:
            continue
        parent = ancestors[-1]
        if selected_id is None:
            errors.add(
                f"node '{parent}' gained child '{node.id}' "
                "(no node may gain children in execute mode)"
            )
        else:
            errors.add(
                f"node '{parent}' gained child '{node.id}' "
                f"(only the selected node '{selected_id}' may gain children)"
            )
    return tuple(sorted(errors))
