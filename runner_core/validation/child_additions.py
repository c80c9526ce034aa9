"""Layer 5 of validation: where new children may appear.

Decides whether nodes that are new in the next tree hang only under the selected node, and
only while decomposing. Moving an existing open node is not an addition.
"""

from __future__ import annotations

from runner_core.tree.model import Node, iter_preorder, nodes_by_id, path_of
from runner_core.validation.finding import Finding


def child_findings(prev: Node, next_tree: Node, selected_id: str | None) -> tuple[Finding, ...]:
    """Every new child hung where it may not be, sorted by message, then path (the same
    message may stand for children at several paths).

    `selected_id` is the node being decomposed, or None in execute mode, where no node may
    gain children.
    """
    known = nodes_by_id(prev)
    errors: list[Finding] = []
    for node, ancestors in iter_preorder(next_tree):
        if node.id in known or not ancestors or ancestors[-1] == selected_id:
            continue
        gained = f"node '{ancestors[-1]}' gained child '{node.id}'"
        if selected_id is None:
            code, rule = (
                "child_added_in_execute_mode",
                "(no node may gain children in execute mode)",
            )
        else:
            code = "child_added_outside_selected"
            rule = f"(only the selected node '{selected_id}' may gain children)"
        path = path_of(ancestors, node.id)
        errors.append(Finding("child_additions", node.id, path, code, f"{gained} {rule}"))
    return tuple(sorted(errors, key=lambda found: (found.message, found.path or "")))
