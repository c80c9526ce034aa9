"""Layer 2 of validation: the tree's semantic invariants (SPEC §4.2).

Decides whether ids are unique, `max_attempts` is positive, `attempts` stays within it and
siblings are in `(order, id)` order. Reads only the tree it is given; never repairs it.
"""

from __future__ import annotations

from itertools import pairwise

from runner_core.model import Node, iter_preorder, trail_path


def validate_invariants(tree: Node) -> tuple[str, ...]:
    """Every invariant violation of `tree`, sorted; empty when it holds them all."""
    errors: list[str] = []
    seen: set[str] = set()
    for node, trail in iter_preorder(tree):
        # Paths are built only for errors: a valid deep chain stays linear.
        if node.id in seen:
            errors.append(f"duplicate id '{node.id}' at {trail_path(trail, node.id)}")
        seen.add(node.id)
        if node.max_attempts <= 0:
            errors.append(f"{trail_path(trail, node.id)}: max_attempts must be > 0")
        if node.attempts > node.max_attempts:
            errors.append(
                f"{trail_path(trail, node.id)}: attempts {node.attempts} "
                f"exceeds max_attempts {node.max_attempts}"
            )
        if len(node.children) > 1:
            keys = [child.sort_key for child in node.children]
            if any(a > b for a, b in pairwise(keys)):
                errors.append(
                    f"{trail_path(trail, node.id)}: children must be sorted by (order,id)"
                )
    return tuple(sorted(errors))
